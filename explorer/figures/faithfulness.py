"""The Faithfulness page's figure: one row per score (leave-one-out, gradient × input, each attention-derived
score), one column per scored source token, so that where the references and attention agree shows at a glance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.figures.common import position_labels, token_axes

VALUES, RANKS = "values", "ranks"
SCALES = {VALUES: "values (each row ÷ its largest magnitude)", RANKS: "ranks (1 = highest; what Spearman compares)"}


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
                      colorbar=dict(title="÷ row's<br>largest"))
    labels = position_labels(tokens)
    figure = go.Figure(go.Heatmap(
        z=shown, x=labels, y=names, customdata=np.dstack([raw, ranks]), xgap=1, ygap=1, **colour,
        hovertemplate="%{y}<br>token %{x}<br>score %{customdata[0]:.4g}<br>rank %{customdata[1]}<extra></extra>"))
    figure.update_layout(title=title, margin=dict(l=10, r=10, b=10))
    token_axes(figure, row_title="", column_title="source token")
    return figure
