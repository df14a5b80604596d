"""Attention: one head, then (one tab at a time) every head, the head average, rollout and flow, and bertviz's
views; over the model's pieces or over words (Clark et al. 2019)."""

import streamlit as st

from explorer.analyses.flow import MAX_FLOW_TOKENS, attention_flow
from explorer.capture.inputs import InputError
from explorer.capture.head_sets import HeadSpec, live_heads, parse_heads
from explorer.analyses.rollout import attention_rollout, head_average
from explorer.analyses.sinks import SINK_THRESHOLD, sink_notes
from explorer.figures.bertviz_views import OfflineScriptsMissing, head_view_html, model_view_html
from explorer.figures.attention import attention_heatmap, focus_heatmap, focus_size, heads_grid, overview_heatmap
from explorer.figures.pooling import budget_factor
from explorer.figures.windows import focus_range, window_size, window_trace, window_words
from explorer.capture.exports import matrix_table
from pages.components.session import current_trace, pruning_notice
from explorer.figures.common import (ABSOLUTE, CONTENT_WIDTH, NORMS, PANEL_LABELS, PER_FIGURE, cell_size, is_long,
                                    plural)
from explorer.analyses.norms import norm_shares, weight_and_norm_shares
from pages.components import url_state
from pages.components.glossary_links import linked, term_help
from pages.components.units import attention_units, in_units
from pages.components.word_focus_section import word_focus_section
from pages.components.widgets import attention_values, choose_head, colour_scale, figure_places, one_tab_at_a_time, show_figure

VIEWS = ["Every head", "Head average", "Rollout & flow", "bertviz head view", "bertviz model view"]
SELF_ATTENTION = ("encoder", "decoder")        # rollout and flow follow one stack's self-attention
# Measured: explorer.analyses.flow.attention_flow on the 8-head model's encoder, this 2-core machine (docs/analyses.md, "Attention flow
# and rollout"); its time grows with the fourth power of the length.
FLOW_COST = "on the bundled 8-head model about 0.01 s at 5 tokens, 0.15 s at 20 and 2 s at 45 on a 2-core CPU"

st.title("Attention")   # first: the notices about the sentence go under it
st.caption("Each row is a query token, each column a key it may look at; a row's colours are its attention weights "
           "and sum to 1.", help=term_help("attention weight", "query, key, value"))
checkpoint, trace = current_trace()
pruning_notice(checkpoint)
read_trace = trace      # over pieces, as traced: the word-focus section below aggregates it itself
kind, layer, head = choose_head(checkpoint, "attention", first_kind="encoder", kinds=tuple(trace.attention))
values_column, units_column = st.columns(2)
shown = attention_values("attention_values", values_column)       # weights, or Kobayashi et al.'s norms
units = attention_units("attention_units", units_column)           # pieces, or Clark et al.'s words
pieces = len(trace.query_tokens(kind)), len(trace.key_tokens(kind))
trace = in_units(trace, checkpoint, units)
in_words = " (words)" if units == "words" else ""
if units == "words":
    st.caption(f"Words (Clark et al. 2019): attention to a word is the sum over its pieces, from a word the mean of "
               f"its pieces' rows, so each row still sums to 1; punctuation and special tokens are words of their own "
               f"({pieces[0]} × {pieces[1]} pieces → {len(trace.query_tokens(kind))} × {len(trace.key_tokens(kind))} "
               "words). Every view below is drawn over words.")
queries, keys = trace.query_tokens(kind), trace.key_tokens(kind)
pattern = trace.attention[kind][shown]
pruned_heads = parse_heads(trace.pruned, checkpoint)
live = live_heads(pruned_heads, checkpoint, kind)          # None, or 0 for each pruned head of this kind
if HeadSpec(kind, layer, head) in pruned_heads:
    st.warning(f"{HeadSpec(kind, layer, head)} is pruned: it still computes the weights drawn here, but its output is "
               "multiplied by 0, so nothing it reads reaches the next layer"
               + (" (its norms below are 0)." if shown == "norm" else "."))
scale = NORMS if shown == "norm" else colour_scale()
value_name = "norm" if shown == "norm" else "weight"
if shown == "norm":
    by_weight, by_norm, frequent = weight_and_norm_shares(trace, checkpoint, kind)
    if frequent:
        named = ", ".join(dict.fromkeys(keys[position] for position in frequent))
        st.caption(f"Special tokens and punctuation ({named}) get {by_weight:.0%} of this kind's attention by weight "
                   f"and {by_norm:.0%} by norm (every layer, head and query; each row scaled to sum 1). Kobayashi et "
                   "al. found such frequent tokens get high weights but small f(x): much less by norm.")


def focus_window() -> tuple[range, range] | None:
    """A sentence longer than a projector's column can label (explorer.figures.attention.focus_size: 24 of the
    45-word caption's 49 pieces) gets a window of it, chosen here (URL `tokens=` its first position) and drawn with
    every label by each heatmap below, the whole pattern beside it; None: the sentence is drawn whole."""
    size = focus_size(queries)
    longest = max(len(queries), len(keys))
    if longest <= size:
        return None
    starts = list(range(longest - size + 1))

    def encode(first: int) -> str:      # the window at the start: left out of the URL
        return str(first) if first else ""

    url_state.kept("attention_tokens", "tokens", starts, encode, default=0)
    start = st.select_slider(f"Window drawn with every label: {size} of the {longest} {units_name}", starts,
                             key="attention_tokens",
                             format_func=lambda first: f"{units_name} {first}–{first + size - 1}",
                             help="A projector's column labels about two dozen tokens a side at a readable size: "
                                  "the heatmaps draw this part of the sentence with every label, and the whole "
                                  "pattern beside it, the window outlined (hover names its tokens).")
    url_state.keep("tokens", start, encode)
    return focus_range(len(queries), start, size), focus_range(len(keys), start, size)


def draw_heatmap(matrix, title: str, name: str, numbers, scale: str) -> None:
    """A [query, key] heatmap: the whole sentence, or a long one's focus window with the whole pattern beside it
    (a row that wraps: side by side in a wide column, the overview under the window at 1024 px)."""
    if window is None:
        show_figure(attention_heatmap(matrix, queries, keys, title, scale=scale), name, numbers)
        return
    rows, columns = window
    pair = st.container(horizontal=True)
    with pair.container(width="content"):
        show_figure(focus_heatmap(matrix, queries, keys, title, rows, columns, scale, units_name), name, numbers,
                    width="content")
    with pair.container(width="content"):
        show_figure(overview_heatmap(matrix, queries, keys, rows, columns, scale), f"{name}-whole", width="content")


units_name = "words" if units == "words" else "tokens"
window = focus_window()
draw_heatmap(pattern[layer, head],
             f"{kind}, layer {layer}, head {head}" + (": ‖α·f(x)‖" if shown == "norm" else "") + in_words,
             f"{kind}-L{layer}-H{head}" + ("-norm" if shown == "norm" else ""),
             matrix_table(pattern[layer, head], queries, keys), scale)
pale = (" Spread over this many keys a head's weights are small, so on 0–1 most cells are pale: “0–max of each "
        "figure” under Attention colours (sidebar) shows the pattern." if scale == ABSOLUTE else "")
if window is not None:
    st.caption(f"{len(queries)} × {len(keys)} {units_name}: the window chosen above is drawn with every label, the "
               "whole pattern beside it (under it in a narrow window) with the window outlined; hover names any "
               f"cell's tokens, each figure's ⬇ HTML zooms, and the CSV has every {value_name}."
               + (pale if is_long(max(len(queries), len(keys))) else ""))
elif is_long(max(len(queries), len(keys))):
    drawn = ("every token is drawn; zoom in (drag over a region) to read each label" if budget_factor(
        len(queries), len(keys)) == 1 else "drawn pooled, as its title says")
    st.caption(f"{len(queries)} × {len(keys)} tokens: {drawn}; the CSV has every {value_name}.{pale}")


def every_head() -> None:
    st.caption(f"Rows are layers, columns heads; hover any cell for its head, tokens and {value_name}. Outlined: "
               f"{linked('attention sink', 'attention sinks')}, heads with ≥ {SINK_THRESHOLD:.0%} of their weight (and twice uniform attention) "
               "on the first token, special tokens and punctuation on this sentence, with that share by weight and "
               "by norm (Clark et al. 2019, Xiao et al. 2023; the Heads page lists them).")
    grid = heads_grid(pattern, queries, keys, f"{kind}: {plural(checkpoint.layers(kind), 'layer')} × "
                      f"{plural(checkpoint.heads, 'head')} (hover for tokens){in_words}", scale,
                      flags={**sink_notes(trace, checkpoint, kind),     # a pruned head is outlined and says so
                             **{(spec.layer, spec.head): "pruned" for spec in pruned_heads if spec.kind == kind}})
    # A long sentence's pooled grid has its own width (square cells); a short one stretches over the page.
    show_figure(grid, f"{kind}-all-heads", {f"{kind}.{shown}": pattern},
                width="content" if grid.layout.width else "stretch")


def average() -> None:
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


def rollout_and_flow() -> None:
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
    st.caption("Both are coloured from 0 to their own largest value (the colour bar says it), whatever the "
               "sidebar's colour scale: their rows spread over every token.")
    weights = trace.pattern(kind)
    last = checkpoint.layers(kind) - 1
    stack = kind.capitalize()
    rolled = attention_rollout(weights, live)      # pruned heads left out of each layer's average
    tokens = len(queries)
    st.caption(f"Flow's cost: one max-flow problem per pair of tokens, on a graph of {last + 2} × {tokens} nodes; "
               f"{FLOW_COST}. It runs up to {MAX_FLOW_TOKENS} tokens; rollout at any length.")
    # Side by side while both fit half the page with every token labelled; else one under the other.
    halves = not is_long(tokens) and cell_size(tokens) * tokens + PANEL_LABELS <= CONTENT_WIDTH // 2
    places = figure_places(2, halves)
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


def bertviz_window(drawn) -> tuple:
    """bertviz draws a line per token pair in every head: a long input gets a window of tokens on each long side
    (windows.window_size: 40, fewer for many heads), chosen here (the figures above show every token)."""
    longest = max(len(drawn.source_tokens), len(drawn.target_tokens))
    size = window_size(drawn)
    if not window_words(drawn, 0, size):
        return drawn, ""
    url_state.kept("attention_window", "window", range(longest - size + 1), default=0)
    start = st.slider(f"bertviz shows {size} tokens from position", 0, longest - size, key="attention_window",
                      help="bertviz draws a line for every pair of tokens in every head: beyond a few dozen tokens "
                           "they blur into one block (and the page grows to tens of megabytes).")
    url_state.keep("window", start)
    return window_trace(drawn, start, size), window_words(drawn, start, size)


def bertviz_view(name: str) -> None:
    drawn = trace
    if shown == "norm":     # bertviz's lines are a row's shares of 1: each row's norms scaled to sum 1
        st.caption("Norms ‖α·f(x)‖ in bertviz: each query's norms scaled to sum 1, so a line's strength is the key's "
                   "share of what moves that query.")
        drawn = norm_shares(trace)
    windowed, words = bertviz_window(drawn)
    if words:
        st.caption(f"bertviz on a window of the text: {words}; move the slider for others. Each line is a query's "
                   "weight on a key inside the window (its weight on keys outside is not drawn); the heatmaps "
                   "above show every token.")
    try:
        # Our own page (bertviz's scripts, escaped parameters): no user text reaches it unescaped.
        html = head_view_html(windowed, layer=layer) if name == "head" else model_view_html(windowed)
    except OfflineScriptsMissing as error:
        st.error(str(error))
        return
    st.iframe(html, height="content")       # Streamlit measures the view and sizes the frame to it
    st.download_button("⬇ HTML", html, file_name=f"bertviz-{name}-view.html", mime="text/html", key=f"bertviz_{name}",
                       help="A standalone page with bertviz's scripts and d3/jQuery inlined: it opens offline.")
    st.caption("⬇ HTML saves this view as one standalone file that works offline (for slides or a paper's "
               "supplement).", help=term_help("bertviz"))


# Only the open tab runs and is drawn: five views at once took the browser 1.4 s to redraw on every new
# sentence; one at a time keeps a resubmitted sentence under half a second.
drawers = [every_head, average, rollout_and_flow, lambda: bertviz_view("head"), lambda: bertviz_view("model")]
one_tab_at_a_time(dict(zip(VIEWS, drawers)), "attention_view", "view")

word_focus_section(checkpoint, read_trace)        # the lecture's question: which word does “it” look at?
