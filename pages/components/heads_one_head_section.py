"""The Heads page's "One head" tab: one head's numbers (confidence, rare-token rate and chance, importance), its
offset histogram and syntactic evidence, the sentences where it behaves most typically, and its pattern on the
current sentence. The role maps and the table: heads_roles_section.py."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.corpus_scoring import corpus_task
from explorer.analyses.corpus.results import ImportanceReport, RolesReport
from explorer.analyses.corpus.roles import SHORT_PIECES, reclassified
from explorer.capture.trace import Trace
from explorer.figures.common import ABSOLUTE
from explorer.figures.focus import drawn_whole, focus_size
from explorer.figures.head_roles import offset_histogram, syntactic_evidence
from explorer.figures.windows import focus_range
from explorer.pages.components import url_state
from explorer.pages.components.attention_heatmap import draw_heatmap
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.heads_roles_section import MEASURES, importance_scores, offered_measures
from explorer.pages.components.widgets import show_figure


def one_head(checkpoint, roles: RolesReport | None, importance: ImportanceReport | None, thresholds,
             trace: Trace | None) -> None:
    """The head chosen here (or on another page: `head=`), its numbers and its pattern on the current sentence
    (`trace`; None when there is none to read: the page has said why)."""
    if roles is None:
        st.info("This checkpoint ships no head roles: compute them on the Roles and importance tab.")
        return
    entries = reclassified(roles, thresholds)
    # The importance measure chosen on the Roles and importance tab (kept in the URL), else the first offered.
    offered = offered_measures(checkpoint, corpus_task(checkpoint))
    measure_label = url_state.saved("measure") if url_state.saved("measure") in offered else offered[0]
    scores = importance_scores(importance, MEASURES[measure_label])
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
                     help="Importance: the measure chosen on the Roles and importance tab.",
                     width="content")
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
    text = roles.corpus.text
    st.markdown(f"**Sentences where it behaves most typically** (from {(text and text.name) or 'the corpus'})")
    for example in entry.examples:
        st.text(example)

    if trace is None:
        return
    st.header(f"{spec} on the current sentence")
    kind, layer, head = entry.kind, entry.layer, entry.head
    pattern, queries, keys = trace.pattern(kind)[layer, head], trace.query_tokens(kind), trace.key_tokens(kind)
    size = focus_size(queries)
    if drawn_whole(queries, keys):
        draw_heatmap(pattern, f"{spec} on the current sentence", f"{spec}-current", None, ABSOLUTE, queries=queries,
                     keys=keys, window=None, units_name="tokens")
    else:
        # Longer than a projector's column can label: as the Attention page draws it, a window of the first tokens
        # with every label and the whole pattern beside it (under it at 1024 px).
        rows, columns = focus_range(len(queries), 0, size), focus_range(len(keys), 0, size)
        draw_heatmap(pattern, f"{spec} on the current sentence", f"{spec}-current", None, ABSOLUTE, queries=queries,
                     keys=keys, window=(rows, columns), units_name="tokens")
        st.caption(f"{len(queries)} × {len(keys)} tokens: the first {size} drawn with every label, the whole pattern "
                   "beside them (its ⬇ HTML names any cell's tokens on hover); the Attention page moves the window along the "
                   "sentence.")
