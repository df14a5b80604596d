"""The Faithfulness page's figure: one row per score (leave-one-out, gradient × input, each attention-derived
score), one column per scored source token, so that where the references and attention agree shows at a glance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.figures.common import axis_length, label_room, position_labels, token_axes

VALUES, RANKS = "values", "ranks"
SCALES = {VALUES: "values (each row as a share of its largest magnitude)", RANKS: "ranks (1 = highest; what Spearman compares)"}


def rank_of(values: np.ndarray) -> np.ndarray:
    """1 for the highest value, ties by position."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values), dtype=int)
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


def scores_table(scores: dict[str, np.ndarray], titles: dict[str, str], tokens: list[str]) -> pd.DataFrame:
    """The raw scores, a row per method (the CSV download)."""
    return pd.DataFrame({titles[m]: v for m, v in scores.items()}, index=position_labels(tokens)).T


def faithfulness_figure(scores: dict[str, np.ndarray], titles: dict[str, str], tokens: list[str], scale: str,
                        title: str) -> go.Figure:
    """scores: method → value per token, references first. scale VALUES: each row divided by its largest |value|
    (red: the output depends on / attention goes to the token; blue: negative leave-one-out); RANKS: 1 = the
    token the method ranks highest."""
    names = [titles[m] for m in scores]
    raw = np.stack([np.asarray(v, dtype=float) for v in scores.values()])
    ranks = np.stack([rank_of(v) for v in raw])
    if scale == RANKS:
        shown, colour = ranks, dict(colorscale="Viridis", reversescale=True, zmin=1, zmax=max(2, len(tokens)),
                                    colorbar=dict(title="rank"))
    else:
        largest = np.abs(raw).max(axis=1, keepdims=True)
        shown = raw / np.where(largest > 0, largest, 1)
        colour = dict(colorscale="RdBu", reversescale=True, zmin=-1, zmax=1, zmid=0,
                      colorbar=dict(title="share of<br>the row's<br>largest<br>magnitude"))
    labels = position_labels(tokens)
    if across(names, len(tokens)):
        figure = go.Figure(go.Heatmap(
            z=shown, x=labels, y=names, customdata=np.dstack([raw, ranks]), xgap=1, ygap=1, **colour,
            hovertemplate="%{y}<br>token %{x}<br>score %{customdata[0]:.4g}<br>rank %{customdata[1]}<extra></extra>"))
        figure.update_layout(title=title, margin=dict(l=10, r=10, b=10))
        token_axes(figure, row_title="", column_title="source token")
        return figure
    # Too many tokens for the sizing rule's cells across the page's column (plotly figures never grow wider than
    # it): a row per token instead, the figure growing down with the sentence, every token labelled level.
    figure = go.Figure(go.Heatmap(
        z=shown.T, x=names, y=labels, customdata=np.dstack([raw, ranks]).transpose(1, 0, 2), xgap=1, ygap=1,
        **colour, hovertemplate="%{x}<br>token %{y}<br>score %{customdata[0]:.4g}<br>rank %{customdata[1]}"
                                "<extra></extra>"))
    figure.update_layout(title=title, margin=dict(l=10, r=10, b=10))
    token_axes(figure, row_title="source token", column_title="")
    # The names at 30° (not token_axes' 60°), untitled, take less room above the cells: the margin shrinks by that.
    saved = label_room(names, len(names)) - label_room(names, len(names), angle=30) + 24     # 24: no axis title
    figure.update_xaxes(tickangle=-30)
    figure.update_layout(margin=dict(t=figure.layout.margin.t - saved), height=figure.layout.height - saved)
    return figure


# The narrowest main column the page is read in: a projector's 1024 px window with the sidebar open (564 px
# measured in Chromium). Sized for the wide page's column (CONTENT_WIDTH) instead, a 19-token sentence's cells were
# squeezed there until their labels ran into each other.
NARROWEST_COLUMN = 560


def across(names: list[str], count: int) -> bool:
    """Whether tokens go across (a column each): while the sizing rule's cells fit the narrowest column the page
    is read in beside the rows' names and the colour bar."""
    return names_width(names) + axis_length(count) + COLOUR_BAR <= NARROWEST_COLUMN


COLOUR_BAR = 130        # px right of the cells: the colour bar, its ticks and its title


def names_width(names: list[str]) -> int:
    """Px left of the cells: the rows' names at plotly's 12 px font, and the margin."""
    return int(7 * max((len(name) for name in names), default=0)) + 30
