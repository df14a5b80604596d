"""The figures of the registered analyses' records (explorer/analyses/registry.py), by the record's type: a new
analysis that returns a HeadScores needs no figure of its own."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.analyses.records import HeadScores
from explorer.figures.common import SMALLEST_FONT, font, wrapped_title

PRINTED_UP_TO = 16      # heads and layers a side: up to this, each cell prints its number (a class cannot hover)


def head_scores_figure(record: HeadScores, title: str = "") -> go.Figure:
    """A layers × heads map for each attention kind, one colour scale for all (the kinds compare); a pruned head's
    cell blank."""
    kinds = list(record.scores)
    figure = make_subplots(rows=len(kinds), cols=1, subplot_titles=[kind.heading for kind in kinds],
                           vertical_spacing=0.12 / max(1, len(kinds) - 1) if len(kinds) > 1 else 0.0)
    finite = np.concatenate([values[np.isfinite(values)] for values in record.scores.values()] or [np.zeros(1)])
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    layers = max(values.shape[0] for values in record.scores.values())
    heads = max(values.shape[1] for values in record.scores.values())
    printed = max(layers, heads) <= PRINTED_UP_TO
    for row, kind in enumerate(kinds, start=1):
        values = record.scores[kind]
        figure.add_trace(go.Heatmap(
            z=values, x=[f"head {head}" for head in range(values.shape[1])],
            y=[f"layer {layer}" for layer in range(values.shape[0])], coloraxis="coloraxis",
            texttemplate="%{z:.2f}" if printed else None, textfont=dict(size=font(SMALLEST_FONT)),
            hovertemplate=f"{kind.short} %{{y}}, %{{x}}<br>{record.measure}: %{{z:.3f}}<extra></extra>"),
            row=row, col=1)
    figure.update_yaxes(autorange="reversed", tickfont=dict(size=font(12)))
    figure.update_xaxes(side="top", tickfont=dict(size=font(12)))
    figure.update_annotations(yshift=font(12) + 8)          # kind titles above their head labels
    note = f"the mean over {record.sentences} sentences" if record.sentences > 1 else "this sentence"
    heading = wrapped_title(f"{title or record.measure}<br><sup>{note}; {record.reading}</sup>", 520)
    cell = font(34)
    figure.update_layout(title=dict(text=heading, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
                         coloraxis=dict(colorscale="Viridis", cmin=low, cmax=high,
                                        colorbar=dict(title=dict(text="", side="right"), thickness=12)),
                         height=len(kinds) * (layers * cell + font(12) * 3 + 30) + 120,
                         margin=dict(l=10, r=10, t=120, b=10), plot_bgcolor="white")
    return figure


FIGURES = {HeadScores: head_scores_figure}


def figure_of(record, title: str = "") -> go.Figure:
    """The figure of a registered analysis's record, by its type."""
    return FIGURES[type(record)](record, title)
