"""The Heads page's "Roles and importance" tab: the role maps and the head table (Voita et al. 2019's positional,
syntactic and rare-token heads, coloured by role or importance) and recomputing them on a corpus
(pages/components/heads_recompute_section.py). One head's numbers: heads_one_head_section.py."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.corpus_scoring import SCORERS, corpus_task
from explorer.analyses.corpus.head_table import COLUMN_GROUPS, MEASURE_HEADERS, head_table, shown_columns
from explorer.analyses.corpus.results import ImportanceReport, RolesReport
from explorer.analyses.corpus.roles import corpus_description, reclassified, role_summary
from explorer.capture.exports import table_csv
from explorer.figures.common import plural
from explorer.figures.role_map import COLOUR_BY, role_cells, role_map_html
from explorer.models.vocabulary import KIND_TITLES
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.heads_recompute_section import recompute_on_your_corpus
from explorer.pages.components.widgets import show_table_figure
from explorer.teaching.wording import HEAD_NAMING

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


def offered_measures(checkpoint, scorer) -> list[str]:
    """The importance measures this model has, by label."""
    # With one head per layer, per-layer normalisation makes every score 1.00: not worth offering. The change on
    # masking is in the model's own metric (BLEU's for translation models, perplexity's for language models).
    unmeasured = {f"{other.metric_key}_change" for other in SCORERS.values()} - {f"{scorer.metric_key}_change"}
    return [m for m in MEASURES if (checkpoint.heads > 1 or MEASURES[m] != "gradient_importance_normalised")
            and MEASURES[m] not in unmeasured]


def importance_scores(importance: ImportanceReport | None, measure: str) -> dict:
    """Each head's score (by spec) in one measure, where it has one."""
    return {h.spec: h.measure(measure) for h in (importance.heads if importance else [])
            if h.measure(measure) is not None}


def roles_and_importance(checkpoint, roles: RolesReport | None, importance: ImportanceReport | None,
                         thresholds) -> None:
    """The role maps and the head table; recomputing roles and importance on a corpus."""
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
                    f"The strongest candidates — {candidates}. Lower the thresholds (above) to see them get one. "
                    f"{HEAD_NAMING}")
        else:
            st.caption(f"Of {plural(summary['heads'], 'head')}: {summary['positional']} positional, "
                       f"{summary['syntactic']} syntactic, {summary['rare-token']} rare-token; strongest candidates — "
                       f"{candidates}. {HEAD_NAMING}")
        st.caption(f"Roles measured: {corpus_description(roles)}."
                   + (f" Importance on {importance.corpus.name} ("
                      f"{plural(importance.corpus.pairs, scorer.example_word)})." if importance else ""),
                   help=term_help("positional head", "syntactic head", "rare-token head"))

    offered = offered_measures(checkpoint, scorer)
    url_state.kept("heads_measure", "measure", offered)
    measure_label = st.radio("Importance shown", offered, key="heads_measure", horizontal=True,
                             help=term_help("head importance", scorer.metric))
    url_state.keep("measure", measure_label)
    measure = MEASURES[measure_label]
    scores = importance_scores(importance, measure)
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
        # The maps at their own width (role_map_html), in a row that wraps: side by side in the wide page, one
        # under another in a projector's column; the table under them at the page's width.
        maps_row = st.container(horizontal=True)
        for kind, title in KIND_TITLES.items():
            kind_entries = [e for e in entries if e.kind == kind]
            if kind_entries:
                cells = role_cells(kind_entries, checkpoint.layers(kind), checkpoint.heads, scores,
                                   colour_by=colour_by, measure=measure_label, measure_key=measure,
                                   measure_short=MEASURE_HEADERS[measure])
                numbers = pd.DataFrame([{"spec": e.spec, "confidence": e.confidence, "roles": ", ".join(e.roles)}
                                        | ({measure: scores.get(e.spec)} if scores else {}) for e in kind_entries])
                with maps_row.container(width="content"):       # a table of text (explorer/figures/role_map.py)
                    show_table_figure(role_map_html(cells, title), f"roles-{kind}", numbers, width="content")
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

    recompute_on_your_corpus(checkpoint, scorer)     # pages/components/heads_recompute_section.py
