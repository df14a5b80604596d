"""The Attention page's tabs "bertviz head view" and "bertviz model view": bertviz's own views of the sentence,
offline (explorer/figures/bertviz_views.py), on a window of a long input, with a standalone HTML download."""

from __future__ import annotations

import streamlit as st

from explorer.analyses.sentence.norms import norm_shares
from explorer.figures.bertviz_views import OfflineScriptsMissing, head_view_html, model_view_html
from explorer.figures.windows import window_size, window_trace, window_words
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import term_help


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


def bertviz_view(name: str, trace, shown: str, layer: int) -> None:
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
