"""Compare the bundled 1-, 2- and 8-head models on the current sentence: what do more heads buy?"""

import pandas as pd
import streamlit as st

from explorer.shipped_analyses import IMPORTANCE_FILE, ROLES_FILE, shipped, summary
from explorer.figures.attention import layer_heads
from explorer.inputs import InputError
from models.vocabulary import KIND_TITLES
from views.session import BUNDLED, cached_checkpoint, cached_trace, selection, warn_if_truncated, weights_mtime
from views.widgets import show_figure


st.title("1 head vs 2 heads vs 8 heads")
labels = [label for label, path in sorted(BUNDLED.items(), key=lambda item: item[1].name)
          if (path / "config.json").is_file()]
if len(labels) < 2:
    st.info("Comparing needs at least two of the bundled models (models/en-de-h1, -h2, -h8).")
    st.stop()
chosen = selection()
models = {label: cached_checkpoint(str(BUNDLED[label]), weights_mtime(str(BUNDLED[label]))) for label in labels}
try:
    traces = {label: cached_trace(str(BUNDLED[label]), weights_mtime(str(BUNDLED[label])), chosen.sentence, 1,
                                   fix_casing=chosen.fix_casing) for label in labels}
except InputError as error:
    st.info(str(error))
    st.stop()
warn_if_truncated(traces[labels[0]], models[labels[0]])  # the bundled models share one tokenizer and max length

columns = st.columns(len(labels))
for column, label in zip(columns, labels):
    info = models[label].info.get("scores", {}).get("test_2016_flickr", {})
    with column:
        st.subheader(label)
        st.text(traces[label].translation)
        if info:
            st.caption(f"test BLEU greedy {info.get('bleu_greedy')}, beam 5 {info.get('bleu_beam5')}")

left, middle, right = st.columns([2, 1, 2])
kind = left.radio("Attention", ["encoder", "cross", "decoder"], format_func=KIND_TITLES.get, key="compare_kind", horizontal=True)
layer = middle.selectbox("Layer", range(min(m.model.config.layers(kind) for m in models.values())), key="compare_layer")
source_tokens = traces[labels[0]].source_tokens
focus = right.selectbox("Focus on the source token", range(len(source_tokens)), key="compare_focus",
                        format_func=lambda i: f"{i}: {source_tokens[i]}")
st.caption("Outlined: the focus token — its row (what it attends to) and column (who attends to it) in encoder "
           "self-attention; its column in cross-attention. Decoder self-attention works on each model's own output.")
# Side by side so they compare at a glance, wider for more heads (1, 2 and 4 panels a row) but never so narrow
# that the 1-head model's labels are cut.
widths = [{1: 3, 2: 4}.get(models[label].model.config.heads, 6) for label in labels]
for column, label in zip(st.columns(widths), labels):
    trace = traces[label]
    pattern = trace.pattern(kind)[layer]
    with column:
        show_figure(layer_heads(pattern, trace.query_tokens(kind), trace.key_tokens(kind),
                                f"{models[label].model.config.heads} head{'s' if models[label].model.config.heads > 1 else ''}, "
                                f"{kind} L{layer}",
                                focus_row=focus if kind == "encoder" else None,
                                focus_column=focus if kind in ("encoder", "cross") else None),
                    f"compare-{models[label].name}-{kind}-L{layer}", {"pattern": pattern})

st.header("Head roles and importance")
st.caption("Shipped results at the default thresholds (the Heads page explains them). \"Most …\" names each model's "
           "strongest candidate for a role, whether or not it passes the threshold.")
summaries = {label: summary(shipped(models[label], ROLES_FILE), shipped(models[label], IMPORTANCE_FILE))
             for label in labels}
# One column per model: the long descriptions wrap in their cells instead of running off the table's edge.
st.table(pd.DataFrame(summaries).fillna("").astype(str))
