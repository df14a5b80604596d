"""The Attention page's tabs "Every head", "Head average" and "Rollout & flow": the grid of every head of the kind
with its attention sinks outlined, the layer's head average, and Abnar & Zuidema's rollout and flow
(explorer/analyses/sentence/rollout.py, flow.py) through one stack's self-attention. `draw_heatmap` is the page's: draw_heatmap
of pages/components/attention_heatmap.py with the page's tokens and window."""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.analyses.sentence.flow import MAX_FLOW_TOKENS, attention_flow
from explorer.analyses.sentence.rollout import attention_rollout, head_average
from explorer.analyses.sentence.sinks import SINK_THRESHOLD, sink_notes
from explorer.capture.exports import matrix_table
from explorer.capture.inputs import InputError
from explorer.figures.attention import heads_grid
from explorer.figures.common import PER_FIGURE, plural
from explorer.figures.thumbnails import Tile, thumbnail_grid
from explorer.pages.components.glossary_links import linked
from explorer.pages.components.widgets import figure_places, show_table_figure

SELF_ATTENTION = ("encoder", "decoder")        # rollout and flow follow one stack's self-attention
# Measured: explorer.analyses.sentence.flow.attention_flow on the 8-head model's encoder, this 2-core machine
# (docs/analyses.md, "Attention flow and rollout"); its time grows with the fourth power of the length.
FLOW_COST = "on the bundled 8-head model about 0.01 s at 5 tokens, 0.15 s at 20 and 2 s at 45 on a 2-core CPU"


def every_head(checkpoint, trace, kind: str, pattern, queries: list[str], keys: list[str], shown: str, scale: str,
               in_words: str, pruned_heads) -> None:
    value_name = "norm" if shown == "norm" else "weight"
    st.caption(f"Rows are layers, columns heads: each tile is a head's whole pattern (hover names the head; choose it "
               f"above to see it with every label, or download ⬇ HTML, whose hover names each cell's tokens and "
               f"{value_name}). Outlined: {linked('attention sink', 'attention sinks')}, heads with ≥ "
               f"{SINK_THRESHOLD:.0%} of their weight (and twice uniform attention) on the first token, special "
               "tokens and punctuation on this sentence, with that share by weight and by norm (Clark et al. 2019, "
               "Xiao et al. 2023; the Heads page lists them)"
               + ("; with this many heads a row each is marked S: hover the tile for its shares." if checkpoint.heads > 8
                  else "."))
    pruned_here = [(spec.layer, spec.head) for spec in pruned_heads if spec.kind == kind]
    if pruned_here:         # a pruned head writes nothing: blank, as the word table blanks it, outlined "pruned"
        pattern = pattern.astype(float, copy=True)
        for layer, head in pruned_here:
            pattern[layer, head] = np.nan
    flags = {**sink_notes(checkpoint, trace, kind), **{head: "pruned" for head in pruned_here}}
    title = f"{kind}: {plural(checkpoint.layers(kind), 'layer')} × {plural(checkpoint.heads, 'head')}{in_words}"
    short = checkpoint.heads > 8        # "h11": twelve names in a projector's column
    rows = [(f"layer {layer}", [Tile(pattern[layer, head], f"h{head}" if short else f"head {head}",
                                     f"{kind} layer {layer}, head {head}", flags.get((layer, head), ""))
                                for head in range(checkpoint.heads)]) for layer in range(checkpoint.layers(kind))]
    body = thumbnail_grid(rows, title, f"{len(queries)} × {len(keys)} each, hover names the head", scale,
                          name="every-head")
    show_table_figure(body, f"{kind}-all-heads", {f"{kind}.{shown}": pattern},
                      interactive=lambda: heads_grid(pattern, queries, keys, f"{title} (hover for tokens)", scale,
                                                     flags=flags))


def average(checkpoint, kind: str, layer: int, pattern, live, queries: list[str], keys: list[str], scale: str,
            in_words: str, draw_heatmap) -> None:
    st.caption(f"The {linked('head average', 'average')} of the layer's heads: a summary of the layer that hides what "
               "each head does on its own.")
    averaged = head_average(pattern, live)
    if live is not None:
        st.caption("The pruned heads of this kind are left out: each layer averages the heads still at work.")
    draw_heatmap(averaged[layer], f"{kind}, layer {layer}: average of the {plural(checkpoint.heads, 'head')}"
                 + in_words, f"{kind}-L{layer}-average", matrix_table(averaged[layer], queries, keys), scale)


@st.cache_data(max_entries=64, show_spinner="Solving the max-flow problems…")
def cached_flow(pattern, live=None) -> object:
    """Flow takes a max-flow problem per pair of tokens (seconds at 45): computed once per pattern (and pruning)."""
    return attention_flow(pattern, live=live)


def rollout_and_flow(checkpoint, trace, kind: str, shown: str, live, queries: list[str], in_words: str,
                     draw_heatmap) -> None:
    st.caption("Abnar & Zuidema 2020, “Quantifying attention flow in Transformers”: both follow the head-averaged "
               f"attention plus the {linked('residual stream', 'residual')} (0.5·A + 0.5·I) through the layers. "
               f"**{linked('rollout', 'Rollout')}** multiplies the layers' matrices (every path, its weights "
               f"multiplied); **{linked('attention flow', 'flow')}** treats them as capacities of a network and "
               "takes the maximum flow from each input token to each position (the narrowest layer limits it), rows "
               "scaled to sum 1. Each row: how much each input token feeds that position by the last layer.")
    if kind not in SELF_ATTENTION:
        st.info("Rollout and flow follow self-attention through the layers of one stack: choose encoder or decoder "
                "self-attention.")
        return
    if shown == "norm":
        st.caption("Rollout and flow are defined on the weights (each row sums to 1): they are drawn from them.")
    # Flow spreads each row over many tokens (~0.04 each at 20 tokens): on 0–1 both figures would be near white.
    st.caption("Both are coloured from 0 to their own largest value (the key under each says it), whatever the "
               "sidebar's colour scale: their rows spread over every token.")
    weights = trace.pattern(kind)
    last = checkpoint.layers(kind) - 1
    stack = kind.capitalize()
    rolled = attention_rollout(weights, live)      # pruned heads left out of each layer's average
    tokens = len(queries)
    st.caption(f"Flow's cost: one max-flow problem per pair of tokens, on a graph of {last + 2} × {tokens} nodes; "
               f"{FLOW_COST}. It runs up to {MAX_FLOW_TOKENS} tokens; rollout at any length.")
    # One under the other: half a 1024 px window's column (280 px) holds a short sentence's heatmap but not a
    # window's (24 tokens a side at 15 px and their labels), nor the whole pattern beside it.
    places = figure_places(2, fits=False)
    with places[0]:
        draw_heatmap(rolled[last], f"{stack} rollout through layer {last}{in_words}", f"{kind}-rollout",
                     {"rollout": rolled}, PER_FIGURE)
    with places[1]:
        try:
            flowed = cached_flow(weights, live)
        except InputError as error:
            st.info(str(error))
            return
        draw_heatmap(flowed, f"{stack} attention flow through layer {last}{in_words}", f"{kind}-flow",
                     {"flow": flowed}, PER_FIGURE)
