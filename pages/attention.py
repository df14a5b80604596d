"""Attention: one head, then (one tab at a time) every head, the head average, rollout and flow, and bertviz's
views; over the model's pieces or over words (Clark et al. 2019)."""

from functools import partial

import streamlit as st

from explorer.analyses.sentence.norms import weight_and_norm_shares
from explorer.capture.exports import matrix_table
from explorer.capture.head_sets import HeadSpec, live_heads, parse_heads
from explorer.figures.common import ABSOLUTE, NORMS, is_long
from explorer.pages.components.attention_bertviz_section import bertviz_view
from explorer.pages.components.attention_heatmap import draw_heatmap, focus_window
from explorer.pages.components.attention_views_section import average, every_head, rollout_and_flow
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.traces import current_trace
from explorer.pages.components.units import attention_units, in_units
from explorer.pages.components.widgets import attention_values, choose_head, colour_scale, one_tab_at_a_time
from explorer.pages.components.word_focus_section import word_focus_section

VIEWS = ["Every head", "Head average", "Rollout & flow", "bertviz head view", "bertviz model view"]

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
pattern = trace.attention[kind].value(shown)
pruned_heads = parse_heads(trace.pruned, checkpoint)
live = live_heads(pruned_heads, checkpoint, kind)          # None, or 0 for each pruned head of this kind
if HeadSpec(kind, layer, head) in pruned_heads:
    st.warning(f"{HeadSpec(kind, layer, head)} is pruned: it still computes the weights drawn here, but its output is "
               "multiplied by 0, so nothing it reads reaches the next layer"
               + (" (its norms below are 0)." if shown == "norm" else "."))
scale = NORMS if shown == "norm" else colour_scale()
value_name = "norm" if shown == "norm" else "weight"
if shown == "norm":
    by_weight, by_norm, frequent = weight_and_norm_shares(checkpoint, trace, kind)
    if frequent:
        named = ", ".join(dict.fromkeys(keys[position] for position in frequent))
        st.caption(f"Special tokens and punctuation ({named}) get {by_weight:.0%} of this kind's attention by weight "
                   f"and {by_norm:.0%} by norm (every layer, head and query; each row scaled to sum 1). Kobayashi et "
                   "al. found such frequent tokens get high weights but small f(x): much less by norm.")

# The window of a long sentence (pages/components/attention_heatmap.py), drawn with every label by each heatmap.
units_name = "words" if units == "words" else "tokens"
window = focus_window(queries, keys, units_name)
heatmap = partial(draw_heatmap, queries=queries, keys=keys, window=window, units_name=units_name)
heatmap(pattern[layer, head],
        f"{kind}, layer {layer}, head {head}" + (": ‖α·f(x)‖" if shown == "norm" else "") + in_words,
        f"{kind}-L{layer}-H{head}" + ("-norm" if shown == "norm" else ""),
        matrix_table(pattern[layer, head], queries, keys), scale)
pale = (" Spread over this many keys a head's weights are small, so on 0–1 most cells are pale: “0–max of each "
        "figure” under Attention colours (sidebar) shows the pattern." if scale == ABSOLUTE else "")
if window is not None:
    st.caption(f"{len(queries)} × {len(keys)} {units_name}: the window chosen above is drawn with every label, the "
               "whole pattern beside it (under it in a narrow window) with the window outlined; hover names a "
               f"window cell's tokens, the whole pattern's ⬇ HTML any cell's (each ⬇ HTML is a plotly figure that "
               f"zooms), and the CSV has every {value_name}."
               + (pale if is_long(max(len(queries), len(keys))) else ""))

# Only the open tab runs and is drawn: five views at once took the browser 1.4 s to redraw on every new
# sentence; one at a time keeps a resubmitted sentence under half a second.
# Every head, Head average, Rollout & flow: pages/components/attention_views_section.py; bertviz:
# attention_bertviz_section.py.
drawers = [lambda: every_head(checkpoint, trace, kind, pattern, queries, keys, shown, scale, in_words, pruned_heads),
           lambda: average(checkpoint, kind, layer, pattern, live, queries, keys, scale, in_words, heatmap),
           lambda: rollout_and_flow(checkpoint, trace, kind, shown, live, queries, in_words, heatmap),
           lambda: bertviz_view("head", trace, shown, layer), lambda: bertviz_view("model", trace, shown, layer)]
one_tab_at_a_time(dict(zip(VIEWS, drawers)), "attention_view", "view")

word_focus_section(checkpoint, read_trace)        # the lecture's question: which word does “it” look at?
