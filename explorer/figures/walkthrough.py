"""The Q/K/V walkthrough for one query, with the model's own numbers: its q, every key's k and v, q·k, the scaling,
the softmax weights and z, as bars in three panels side by side (explorer/analyses/sentence/internals.py computes them)."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.analyses.sentence.internals import Walkthrough
from explorer.figures.common import (
    SMALLEST_FONT,
    axis_length,
    display_tokens,
    every_label,
    font,
    is_long,
    position_labels,
    text_width,
    zoom_note,
)
from explorer.figures.matrix import NEG_INF_LABEL


def scaling_words(scaling: float, d_k: int) -> str:
    """The model's scaling of q·k in words: "÷ √d_k (√64 = 8)", or the factor itself when it is something else."""
    if np.isclose(scaling, d_k ** -0.5):
        return f"÷ √d_k (√{d_k} = {np.sqrt(d_k):.3g})"
    if np.isclose(scaling, 1.0):
        return "not divided by √d_k"
    return f"× {scaling:.4g} (the model's own scaling)"


# The walkthrough's three panels side by side are ~130 px each in the narrowest column they are read in (a
# projector's 1024 px window, sidebar open); each panel's range leaves that much room for its numbers beside the
# bars' ends, so no number is shrunk into a bar or runs into the next panel.
WALK_PANEL = 130
PANEL_TITLE_CHARS = 20      # of a panel's title a line: about WALK_PANEL px at 14 px


def bar_number(value: float, weight: bool = False) -> str:
    """A bar's number in five characters at most: 7.84, -0.46, 22.6, −∞; a softmax weight to three decimals
    (0.006, not 0.01)."""
    if not np.isfinite(value):
        return NEG_INF_LABEL
    if weight:
        return f"{value:.3f}"
    return f"{value:.2f}" if abs(value) < 9.995 else f"{value:.1f}" if abs(value) < 99.95 else f"{value:.0f}"


def room_for_numbers(values: np.ndarray, texts: list[str], size: int, panel: int = WALK_PANEL) -> list[float]:
    """An axis range holding bars of `values` (−∞: drawn at 0) and, past each bar's end, its text at `size` px,
    in a panel `panel` px wide."""
    shown = np.where(np.isfinite(values), values, 0.0)
    low, high = min(0.0, float(shown.min())), max(0.0, float(shown.max()))
    gap = 6                             # px between a bar's end and its number
    left = max([text_width(t, size) + gap for t, v in zip(texts, shown) if v < 0], default=0)
    right = max([text_width(t, size) + gap for t, v in zip(texts, shown) if v >= 0], default=0)
    per_px = ((high - low) or 1.0) / max(panel - left - right, panel // 3)
    return [low - left * per_px, high + right * per_px]


def walkthrough_figure(walk: Walkthrough, keys: list[str], query: str, d_k: int) -> go.Figure:
    """q·k, its scaling and softmax for every key, as bars: the arithmetic behind one row of attention. Each bar's
    number stands beside its end at the smallest readable size (on hover only for a long sentence's thin bars)."""
    labels = position_labels(keys)
    names = ["q · k", scaling_words(walk.scaling, d_k) + (" + position bias" if walk.biased else ""), "softmax"]
    size = font(SMALLEST_FONT)
    # Panel titles in lines of a panel's width at 14 px: a long one ("not divided by √d_k + position bias") ran
    # over its neighbour's.
    titles = ["<br>".join(textwrap.wrap(name, PANEL_TITLE_CHARS)) for name in names]
    title_lines = max(title.count("<br>") for title in titles)        # lines beyond the first
    figure = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.06)
    figure.update_annotations(font_size=font(14))
    allowed = np.isfinite(walk.masked)
    long = is_long(len(labels))         # the bars too thin to print on: values on hover, the panels zoom together
    for column, values in enumerate((walk.dots, walk.masked, walk.weights), start=1):
        shown = np.where(np.isfinite(values), values, 0.0)
        text = [bar_number(v, weight=column == 3) for v in values]
        exact = [f"{v:.3f}" if ok else NEG_INF_LABEL for v, ok in zip(values, np.isfinite(values))]
        figure.add_trace(go.Bar(x=shown, y=labels, orientation="h", text=text, customdata=exact,
                                textposition="none" if long else "outside", textfont=dict(size=size),
                                constraintext="none", cliponaxis=False,
                                marker_color=np.where(allowed, "#1f77b4", "#bbbbbb"),
                                hovertemplate="key %{y}<br>%{customdata}<extra></extra>"), row=1, col=column)
        figure.update_yaxes(**every_label(len(labels), showticklabels=column == 1, autorange="reversed"),
                            row=1, col=column)
        if not long:
            figure.update_xaxes(range=room_for_numbers(values, text, size), row=1, col=column)
        if long and column > 1:
            figure.layout[f"yaxis{column}"].matches = "y"
    note = zoom_note(len(labels), what="bar") if long else ""
    figure.update_layout(title=f"query {html_safe(query)}: scores over the keys{note}", showlegend=False,
                         height=max(300, axis_length(len(labels)) + 140 + 20 * title_lines),
                         margin=dict(l=10, r=10, t=(100 if long else 80) + 20 * title_lines, b=10))
    return figure


def html_safe(text: str) -> str:
    return display_tokens([text])[0]
