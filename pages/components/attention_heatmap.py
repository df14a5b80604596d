"""The Attention page's heatmaps of one [query, key] matrix: a sentence longer than a projector's column can label
gets a window of it (focus_window, chosen under the head's pickers), drawn with every label beside the whole
pattern (draw_heatmap); the views under the one head draw theirs the same way."""

from __future__ import annotations

import streamlit as st

from explorer.figures.focus import drawn_whole, focus_size
from explorer.figures.matrix import Matrix, plotly_heatmap
from explorer.figures.token_heatmap import html_heatmap
from explorer.figures.windows import focus_range
from explorer.pages.components import url_state
from explorer.pages.components.widgets import show_table_figure


def focus_window(queries: list[str], keys: list[str], units_name: str) -> tuple[range, range] | None:
    """A sentence longer than a projector's column can label (explorer.figures.focus.focus_size: 24 of the
    45-word caption's 49 pieces) gets a window of it, chosen here (URL `tokens=` its first position) and drawn with
    every label by each heatmap below, the whole pattern beside it; None: the sentence is drawn whole."""
    size = focus_size(queries)
    longest = max(len(queries), len(keys))
    if drawn_whole(queries, keys):
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
                                  "pattern beside it, the window outlined.")
    url_state.keep("tokens", start, encode)
    return focus_range(len(queries), start, size), focus_range(len(keys), start, size)


def draw_heatmap(matrix, title: str, name: str, numbers, scale: str, *, queries: list[str], keys: list[str],
                 window: tuple[range, range] | None, units_name: str) -> None:
    """A [query, key] heatmap: the whole sentence, or a long one's focus window with the whole pattern beside it
    (a row that wraps: side by side in a wide column, the overview under the window at 1024 px). Described once (a
    Matrix), shown as HTML tables (no plotly.js to load), their ⬇ HTML plotly's drawing of the same description."""
    described = Matrix(matrix, queries, keys, title, scale=scale, window=window, units=units_name)
    if window is None:
        show_table_figure(html_heatmap(described), name, numbers, width="content",
                          interactive=lambda: plotly_heatmap(described))
        return
    pair = st.container(horizontal=True)
    for part, suffix in ((described, ""), (described.overview(), "-whole")):
        with pair.container(width="content"):
            show_table_figure(html_heatmap(part), f"{name}{suffix}", None if suffix else numbers, width="content",
                              interactive=lambda part=part: plotly_heatmap(part))
