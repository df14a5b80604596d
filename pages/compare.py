"""Compare two or three models side by side on the current sentence: by default the open model beside the
bundled ones (the 1-, 2- and 8-head models: what do more heads buy?), or any models the explorer opens."""

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.shipped_analyses import summary
from explorer.figures.common import NORMS
from explorer.models.vocabulary import ATTENTION_KINDS, KIND_TITLES
from explorer.pages.components import url_state
from explorer.pages.components.compare_heads_section import show_heads_side_by_side
from explorer.pages.components.compare_models_section import chosen_models, show_outputs
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.head_analyses import head_analysis
from explorer.pages.components.units import attention_units, in_units
from explorer.pages.components.widgets import attention_values, colour_scale
from explorer.teaching.wording import HEAD_NAMING

st.title("Compare models")
st.caption("The same sentence through two or three models side by side, to see how differently their heads attend: in "
           "each heatmap a row is a query token and its colours are the weights it puts on each key.",
           help=term_help("attention weight", "head"))
models, traces, labels = chosen_models()      # pages/components/compare_models_section.py
show_outputs(models, traces, labels)

kinds = [kind for kind in ATTENTION_KINDS if any(kind in trace.attention for trace in traces.values())]
values_column, units_column = st.columns(2)
shown = attention_values("compare_values", values_column)   # weights, or Kobayashi et al.'s norms, as on Attention
units = attention_units("compare_units", units_column)      # pieces, or Clark et al.'s words, as on Attention
traces = {label: in_units(trace, models[label], units) for label, trace in traces.items()}
if units == "words":
    st.caption("Words (Clark et al. 2019): attention to a word is the sum over its pieces, from a word the mean of its "
               "pieces' rows, so each row still sums to 1; punctuation and special tokens are words of their own.")
scale = NORMS if shown == "norm" else colour_scale()
if shown == "norm":
    st.caption("Norms ‖α·f(x)‖ have no common top: each figure is coloured from 0 to its own largest norm (its colour "
               "bar or key says it), so compare the models' patterns, not their shades.")
left, middle, right = st.columns([2, 1, 2])
url_state.kept("compare_kind", "compare_kind", kinds)
kind = left.radio("Attention", kinds, format_func=KIND_TITLES.get, key="compare_kind", horizontal=True,
                  help=term_help("self-attention", "cross-attention"))
url_state.keep("compare_kind", kind)
deepest = max(m.layers(kind) for m in models.values())
url_state.kept("compare_layer", "compare_layer", range(deepest))
layer = middle.selectbox("Layer", range(deepest), key="compare_layer",
                         help="A model with fewer layers shows its last one.")
url_state.keep("compare_layer", layer)
tokens = [traces[label].source_tokens for label in labels]
same_tokens = all(t == tokens[0] for t in tokens) and tokens[0]
focus = None
if same_tokens:
    url_state.kept("compare_focus", "focus", range(len(tokens[0])), tokens=tokens[0])
    focus = right.selectbox("Focus on the source token", range(len(tokens[0])), key="compare_focus",
                            format_func=lambda i: f"{i}: {tokens[0][i]}")
    url_state.keep("focus", focus)
    st.caption("Outlined: the focus token — its row (what it attends to) and column (who attends to it) in encoder "
               "self-attention; its column in cross-attention. Decoder self-attention works on each model's own "
               "output.")
else:
    right.caption("These models split the sentence into different tokens, so there is no shared token to focus on.")

# pages/components/compare_heads_section.py
show_heads_side_by_side(models, traces, labels, kind, layer, shown, scale, focus, tokens)

st.header("Head roles and importance",
          help=term_help("positional head", "syntactic head", "rare-token head", "head importance"))
st.caption("Shipped results (or those computed in this session on the Heads page) at the default thresholds. "
           "\"Most …\" names each model's strongest candidate for a role, whether or not it passes the threshold. "
           + HEAD_NAMING)
summaries = {}
for label in labels:
    summaries[label] = summary(head_analysis("roles", models[label]), head_analysis("importance", models[label]))
if any(summaries.values()):
    # One column per model: the long descriptions wrap in their cells instead of running off the table's edge.
    st.table(pd.DataFrame(summaries).astype(object).fillna("").astype(str))
    if all(not any(lines.get(role) for role in ("positional", "syntactic", "rare-token"))
           for lines in summaries.values() if lines):
        st.caption("No head of these models passes the default thresholds for a role (0 positional, syntactic and "
                   "rare-token heads): the thresholds are Voita et al.'s, set for a large model; the \"Most …\" rows "
                   "show how close each model came, and the Heads page lets you lower them.")
else:
    st.caption("None of these models has head roles or importance yet (the Heads page computes them).")
