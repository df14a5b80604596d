"""The Heads page's "Roles and importance" tab: the role maps and the head table (Voita et al. 2019's positional,
syntactic and rare-token heads, coloured by role or importance), one head's numbers, recomputing on a corpus
(pages/components/heads_recompute_section.py) and the head's pattern on the current sentence."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.head_table import COLUMN_GROUPS, MEASURE_HEADERS, head_table, shown_columns
from explorer.analyses.results import ImportanceReport, RolesReport
from explorer.analyses.roles import SHORT_PIECES, corpus_description, reclassified, role_summary
from explorer.capture.exports import table_csv
from explorer.figures.attention import attention_heatmap
from explorer.figures.focus import drawn_whole, focus_heatmap, focus_size, overview_heatmap
from explorer.figures.common import plural
from explorer.figures.head_roles import COLOUR_BY, offset_histogram, role_map, syntactic_evidence
from explorer.figures.windows import focus_range
from explorer.analyses.corpus_scoring import SCORERS, corpus_task
from models.vocabulary import KIND_TITLES
from pages.components import url_state
from pages.components.glossary_links import term_help
from pages.components.heads_recompute_section import recompute_on_your_corpus
from pages.components.session import current_trace, warn_if_truncated
from pages.components.widgets import show_figure

MEASURES = {"gradient importance": "gradient_importance",
            "gradient importance normalised per layer": "gradient_importance_normalised",
            "loss change when masked alone": "loss_change", "BLEU change when masked alone": "bleu_change",
            "perplexity change when masked alone": "perplexity_change"}


def table_config(shown: pd.DataFrame, measure_label: str) -> dict:
    """Widths and number formats that let the table be read in its column: importance in significant digits
    (raw gradient scores can be ~0.0004), the roles column as wide as its longest text."""
    longest = max([len("roles")] + [len(r) for r in shown["roles"]]) if "roles" in shown else 0
    config = {column: st.column_config.NumberColumn(format="%.2f") for column in
              ("confidence", "offset share", "rare rate", "rare chance", "rare or 2nd rarest")}
    config["offset"] = st.column_config.NumberColumn(format="%+d", help="key − query of its most frequent top weight")
    config["roles"] = st.column_config.TextColumn(width=int(7.2 * longest) + 30)
    for header in MEASURE_HEADERS.values():
        config[header] = st.column_config.NumberColumn(format="%.3g", width=96, help=measure_label)
    return config


def roles_and_importance(checkpoint, roles: RolesReport | None, importance: ImportanceReport | None, thresholds,
                          sentence_notices) -> None:
    """The role maps, the head table, one head's numbers and its pattern on the current sentence; recomputing
    roles and importance on a corpus."""
    # The model's Scorer: its metric (BLEU on sentence pairs, perplexity on plain text …) and what an example is.
    scorer = corpus_task(checkpoint)
    if roles is None:
        st.info("This checkpoint ships no head roles: compute them below on plain sentences and/or a CoNLL-U treebank.")
        entries = []
    else:
        entries = reclassified(roles, thresholds)
        summary = role_summary(entries)
        candidates = "; ".join(f"{name}: {summary[key]}" for name, key in (
            ("positional", "most positional"), ("rare-token", "most rare-token"), ("syntactic", "most syntactic"))
            if summary[key])
        if not any(summary[role] for role in ("positional", "syntactic", "rare-token")):
            st.info(f"No head reaches a role at these thresholds (coloured by role, the maps below would be all grey). "
                    f"The strongest candidates — {candidates}. Lower the thresholds (above) to see them get one.")
        else:
            st.caption(f"Of {plural(summary['heads'], 'head')}: {summary['positional']} positional, "
                       f"{summary['syntactic']} syntactic, {summary['rare-token']} rare-token; strongest candidates — "
                       f"{candidates}.")
        st.caption(f"Roles measured: {corpus_description(roles)}."
                   + (f" Importance on {importance.corpus.name} ("
                      f"{plural(importance.corpus.pairs, scorer.example_word)})." if importance else ""),
                   help=term_help("positional head", "syntactic head", "rare-token head"))

    # With one head per layer, per-layer normalisation makes every score 1.00: not worth offering. The change on
    # masking is in the model's own metric (BLEU's for translation models, perplexity's for language models).
    unmeasured = {f"{other.metric_key}_change" for other in SCORERS.values()} - {f"{scorer.metric_key}_change"}
    offered = [m for m in MEASURES if (checkpoint.heads > 1 or MEASURES[m] != "gradient_importance_normalised")
               and MEASURES[m] not in unmeasured]
    url_state.kept("heads_measure", "measure", offered)
    measure_label = st.radio("Importance shown", offered, key="heads_measure", horizontal=True,
                             help=term_help("head importance", scorer.metric))
    url_state.keep("measure", measure_label)
    measure = MEASURES[measure_label]
    scores = {h.spec: h.measure(measure) for h in (importance.heads if importance else [])
              if h.measure(measure) is not None}
    if entries:
        # Importance colours the maps when the model has it; otherwise the role does.
        colourings = [c for c in COLOUR_BY if c != "importance" or scores]
        url_state.kept("heads_colour_by", "colour_by", colourings)
        colour_by = st.radio("Colour the maps by", colourings, key="heads_colour_by", horizontal=True,
                             help="importance: the measure shown above; each cell shows the value that colours it, "
                                  "its head's every number on hover.\n\n" + term_help("confidence"))
        url_state.keep("colour_by", colour_by)
        if colour_by == "role":
            st.caption("pos: positional, syn: syntactic, rare: rare-token; several roles by their initials (P+R).")
        # The maps at their own width (role_map), in a row that wraps: side by side in the wide page, one under
        # another in a projector's column; the table under them at the page's width.
        maps_row = st.container(horizontal=True)
        for kind, title in KIND_TITLES.items():
            kind_entries = [e for e in entries if e.kind == kind]
            if kind_entries:
                figure = role_map(kind_entries, checkpoint.layers(kind), checkpoint.heads, scores, title,
                                  colour_by=colour_by, measure=measure_label, measure_key=measure,
                                  measure_short=MEASURE_HEADERS[measure])
                with maps_row.container(width="content"):
                    show_figure(figure, f"roles-{kind}",
                                pd.DataFrame([{"spec": e.spec, "confidence": e.confidence, "roles": ", ".join(e.roles)}
                                              | ({measure: scores.get(e.spec)} if scores else {})
                                              for e in kind_entries]), width="content")
        table = head_table(roles, importance, thresholds)
        # A few columns at a time, each group whole in a projector's column; every column is in the CSV.
        group = st.segmented_control("Table columns", list(COLUMN_GROUPS), default=next(iter(COLUMN_GROUPS)),
                                     required=True, key="heads_columns",
                                     help="The head table's columns a group at a time, so that each is read whole; "
                                          "⬇ CSV has them all.")
        shown = shown_columns(table, measure, group)
        # A row of 35 px per head, up to 700 px (then it scrolls); a score a head has not (cross-attention has no
        # offset) is a dash.
        st.dataframe(shown, key="heads_table", height=min(700, 35 * (len(shown) + 1) + 3), placeholder="–",
                     column_config=table_config(shown, measure_label))
        st.download_button("⬇ CSV", table_csv(table), file_name=f"{checkpoint.name}-heads.csv",
                           mime="text/csv", key="heads_csv", help="Every column of the head table, importance included.")

        st.header("One head")
        by_spec = {e.spec: e for e in entries}
        # The head the other pages look at (`head=kind.layer.head`), when Streamlit has forgotten this page's choice.
        by_head = {f"{e.kind}.{e.layer}.{e.head}": e.spec for e in entries}
        url_state.valid("heads_head", list(by_spec))
        if "heads_head" not in st.session_state and url_state.saved("head") in by_head:
            st.session_state["heads_head"] = by_head[url_state.saved("head")]
        spec = st.selectbox("Head", list(by_spec), key="heads_head",
                            format_func=lambda s: f"{s} ({', '.join(by_spec[s].roles) or 'no role'})")
        entry = by_spec[spec]
        url_state.keep("head", f"{entry.kind}.{entry.layer}.{entry.head}")
        # A row that wraps, each number as wide as its label: in four columns at 1024 px the labels were cut
        # ("Peaks on the rarest …").
        facts = st.container(horizontal=True, gap="large")
        facts.metric("Confidence", f"{entry.confidence:.2f}", help=term_help("confidence"), width="content")
        rare = entry.rare_token
        if rare:
            # Chance is a reference, not a change: no arrow.
            facts.metric("Peaks on the rarest token", f"{rare.rate:.0%}", f"chance {rare.chance:.0%}",
                         delta_color="off", delta_arrow="off", width="content")
        if rare and rare.rate_top2 is not None:
            facts.metric("Peaks on the rarest or 2nd rarest", f"{rare.rate_top2:.0%}", f"chance {rare.chance_top2:.0%}",
                         delta_color="off", delta_arrow="off", width="content")
        if scores.get(spec) is not None:        # significant digits: raw gradient scores can be ~0.0004
            facts.metric(measure_label[0].upper() + measure_label[1:], f"{scores[spec]:.3g}",
                         help="Importance: the measure shown above the role maps.", width="content")
        if entry.positional:
            histogram = entry.positional.histogram
            show_figure(offset_histogram(entry), f"{spec}-offsets",
                        pd.DataFrame({"offset": list(histogram), "share": list(histogram.values())}))
        if entry.syntactic:
            scope = st.radio("Treebank sentences", ["all", f"≤ {SHORT_PIECES} pieces"], key="heads_syntax_scope",
                             horizontal=True, disabled=entry.syntactic_short is None,
                             help=term_help("treebank", "dependency relation"))
            short = scope != "all"
            show_figure(syntactic_evidence(entry, short), f"{spec}-syntactic",
                        pd.DataFrame([{"relation": r, "direction": d, **s}
                                      for r, ds in (entry.syntactic_short if short else entry.syntactic).items()
                                      for d, s in ds.items()]))
        text = roles.corpus.text if roles else None
        st.markdown(f"**Sentences where it behaves most typically** (from {(text and text.name) or 'the corpus'})")
        for example in entry.examples:
            st.text(example)

    recompute_on_your_corpus(checkpoint, scorer)     # pages/components/heads_recompute_section.py

    if entries:
        st.header(f"{spec} on the current sentence")
        _, trace = current_trace((), notices=False)
        with sentence_notices:          # under the title, where a notice about the sentence is read first
            warn_if_truncated(trace, checkpoint)
        kind, layer, head = entry.kind, entry.layer, entry.head
        pattern, queries, keys = trace.pattern(kind)[layer, head], trace.query_tokens(kind), trace.key_tokens(kind)
        size = focus_size(queries)
        if drawn_whole(queries, keys):
            show_figure(attention_heatmap(pattern, queries, keys, f"{spec} on the current sentence"), f"{spec}-current",
                        None)
        else:
            # Longer than a projector's column can label: as the Attention page draws it, a window of the first tokens
            # with every label and the whole pattern beside it (under it at 1024 px).
            rows, columns = focus_range(len(queries), 0, size), focus_range(len(keys), 0, size)
            pair = st.container(horizontal=True)
            with pair.container(width="content"):
                show_figure(focus_heatmap(pattern, queries, keys, f"{spec} on the current sentence", rows, columns),
                            f"{spec}-current", None, width="content")
            with pair.container(width="content"):
                show_figure(overview_heatmap(pattern, queries, keys, rows, columns), f"{spec}-current-whole", None,
                            width="content")
            st.caption(f"{len(queries)} × {len(keys)} tokens: the first {size} drawn with every label, the whole pattern "
                       "beside them (hover names any cell's tokens); the Attention page moves the window along the "
                       "sentence.")
