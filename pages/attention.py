"""Attention: one head, then (one tab at a time) every head, the head average, rollout, and bertviz's views."""

import streamlit as st

from explorer.rollout import attention_rollout, head_average
from explorer.bertviz_views import OfflineScriptsMissing, head_view_html, model_view_html
from explorer.figures.attention import attention_heatmap, heads_grid
from explorer.figures.pooling import budget_factor
from explorer.figures.windows import window_size, window_trace, window_words
from explorer.exports import matrix_table
from pages.session import current_trace
from explorer.figures.common import ABSOLUTE, NORMS, is_long, plural
from explorer.norms import weight_and_norm_shares
from pages import url_state
from pages.widgets import attention_values, choose_head, colour_scale, show_figure

VIEWS = ["Every head", "Head average", "Rollout", "bertviz head view", "bertviz model view"]

st.title("Attention")   # first: the notices about the sentence go under it
checkpoint, trace = current_trace()
kind, layer, head = choose_head(checkpoint, "attention", first_kind="encoder", kinds=tuple(trace.attention))
queries, keys = trace.query_tokens(kind), trace.key_tokens(kind)
shown = attention_values("attention_values")       # weights, or Kobayashi et al.'s norms
pattern = trace.attention[kind][shown]
scale = NORMS if shown == "norm" else colour_scale()
value_name = "norm" if shown == "norm" else "weight"
if shown == "norm":
    by_weight, by_norm, frequent = weight_and_norm_shares(trace, checkpoint, kind)
    if frequent:
        named = ", ".join(dict.fromkeys(keys[position] for position in frequent))
        st.caption(f"Special tokens and punctuation ({named}) get {by_weight:.0%} of this kind's attention by weight "
                   f"and {by_norm:.0%} by norm (every layer, head and query; each row scaled to sum 1). Kobayashi et "
                   "al. found such frequent tokens get high weights but small f(x): much less by norm.")

show_figure(attention_heatmap(pattern[layer, head], queries, keys, f"{kind}, layer {layer}, head {head}"
                              + (": ‖α·f(x)‖" if shown == "norm" else ""), scale=scale),
            f"{kind}-L{layer}-H{head}" + ("-norm" if shown == "norm" else ""),
            matrix_table(pattern[layer, head], queries, keys))
if is_long(max(len(queries), len(keys))):
    pale = (" Spread over this many keys a head's weights are small, so on 0–1 most cells are pale: “0–max of each "
            "figure” under Attention colours (sidebar) shows the pattern." if scale == ABSOLUTE else "")
    drawn = ("every token is drawn; zoom in (drag over a region) to read each label" if budget_factor(
        len(queries), len(keys)) == 1 else "drawn pooled, as its title says")
    st.caption(f"{len(queries)} × {len(keys)} tokens: {drawn}; the CSV has every {value_name}.{pale}")


def every_head() -> None:
    st.caption(f"Rows are layers, columns heads; hover any cell for its head, tokens and {value_name}.")
    grid = heads_grid(pattern, queries, keys, f"{kind}: {plural(checkpoint.layers(kind), 'layer')} × "
                      f"{plural(checkpoint.heads, 'head')} (hover for tokens)", scale)
    # A long sentence's pooled grid has its own width (square cells); a short one stretches over the page.
    show_figure(grid, f"{kind}-all-heads", {f"{kind}.{shown}": pattern},
                width="content" if grid.layout.width else "stretch")


def average() -> None:
    averaged = head_average(pattern)
    show_figure(attention_heatmap(averaged[layer], queries, keys,
                                  f"{kind}, layer {layer}: average of the {plural(checkpoint.heads, 'head')}",
                                  scale=scale),
                f"{kind}-L{layer}-average", matrix_table(averaged[layer], queries, keys))


def rollout() -> None:
    st.caption("Abnar & Zuidema 2020: head-averaged attention plus the residual (0.5·A + 0.5·I), multiplied "
               "through the layers — how much each input token flows into each position by the last layer.")
    if kind != "encoder":
        st.info("Rollout follows the encoder's self-attention from the input tokens; choose encoder self-attention.")
        return
    if shown == "norm":
        st.caption("Rollout is defined on the weights (each row sums to 1): it is drawn from them.")
    rolled = attention_rollout(trace.pattern(kind))
    last = checkpoint.layers("encoder") - 1
    show_figure(attention_heatmap(rolled[last], queries, keys, f"Encoder rollout through layer {last}",
                                  scale=scale),
                "encoder-rollout", {"rollout": rolled})


def bertviz_window() -> tuple:
    """bertviz draws a line per token pair in every head: a long input gets a window of tokens on each long side
    (windows.window_size: 40, fewer for many heads), chosen here (the figures above show every token)."""
    longest = max(len(trace.source_tokens), len(trace.target_tokens))
    size = window_size(trace)
    if not window_words(trace, 0, size):
        return trace, ""
    url_state.kept("attention_window", "window", range(longest - size + 1), default=0)
    start = st.slider(f"bertviz shows {size} tokens from position", 0, longest - size, key="attention_window",
                      help="bertviz draws a line for every pair of tokens in every head: beyond a few dozen tokens "
                           "they blur into one block (and the page grows to tens of megabytes).")
    url_state.keep("window", start)
    return window_trace(trace, start, size), window_words(trace, start, size)


def bertviz_view(name: str) -> None:
    if shown == "norm":
        st.caption("bertviz's views draw the weights α (their lines are a row's shares of 1), not the norms.")
    windowed, words = bertviz_window()
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
               "supplement).")


# Only the open tab runs and is drawn: five views at once took the browser 1.4 s to redraw on every new
# sentence; one at a time keeps a resubmitted sentence under half a second.
drawers = [every_head, average, rollout, lambda: bertviz_view("head"), lambda: bertviz_view("model")]
url_state.kept("attention_view", "view", VIEWS)
tabs = st.tabs(VIEWS, key="attention_view", on_change="rerun")
url_state.keep("view", st.session_state.get("attention_view") or VIEWS[0])
for tab, draw in zip(tabs, drawers):
    if tab.open:
        with tab:
            draw()
