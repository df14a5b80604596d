"""Attention: one head, every head, the head average, rollout, and bertviz's head and model views."""

import streamlit as st

from explorer.analysis import attention_rollout, head_average
from explorer.bertviz_views import OfflineScriptsMissing, head_view_html, model_view_html
from explorer.figures.attention import attention_heatmap, heads_grid
from pages.common import choose_head, current_trace, matrix_table, show_figure

checkpoint, trace = current_trace()
config = checkpoint.model.config
st.title("Attention")
kind, layer, head = choose_head(config, "attention", first_kind="encoder")
queries, keys = trace.query_tokens(kind), trace.key_tokens(kind)
pattern = trace.pattern(kind)

show_figure(attention_heatmap(pattern[layer, head], queries, keys, f"{kind}, layer {layer}, head {head}"),
            f"{kind}-L{layer}-H{head}", matrix_table(pattern[layer, head], queries, keys))

st.subheader("Every head")
st.caption("Rows are layers, columns heads; hover any cell for its tokens and weight.")
show_figure(heads_grid(pattern, queries, keys, f"{kind}: {config.layers(kind)} layers × {config.heads} heads"),
            f"{kind}-all-heads", {f"{kind}.pattern": pattern})

average = head_average(pattern)
show_figure(attention_heatmap(average[layer], queries, keys, f"{kind}, layer {layer}: average of the {config.heads} heads"),
            f"{kind}-L{layer}-average", matrix_table(average[layer], queries, keys))

if kind == "encoder":
    rollout = attention_rollout(pattern)
    st.subheader("Attention rollout")
    st.caption("Abnar & Zuidema 2020: head-averaged attention plus the residual (0.5·A + 0.5·I), multiplied "
               "through the layers — how much each input token flows into each position by the last layer.")
    last = config.encoder_layers - 1
    show_figure(attention_heatmap(rollout[last], queries, keys, f"Encoder rollout through layer {last}"),
                "encoder-rollout", {"rollout": rollout})

st.subheader("bertviz")
try:
    head_html, model_html = head_view_html(trace, layer=layer), model_view_html(trace)
except OfflineScriptsMissing as error:
    st.error(str(error))
else:
    head_tab, model_tab = st.tabs(["Head view", "Model view"])
    with head_tab:
        # Our own page (bertviz's scripts, escaped parameters): no user text reaches it unescaped.
        st.iframe(head_html, height=max(400, 26 * max(len(trace.source_tokens), len(trace.target_tokens)) + 120))
        st.download_button("⬇ HTML", head_html, file_name="bertviz-head-view.html", mime="text/html", key="bertviz_head")
    with model_tab:
        st.iframe(model_html, height=900)
        st.download_button("⬇ HTML", model_html, file_name="bertviz-model-view.html", mime="text/html", key="bertviz_model")
