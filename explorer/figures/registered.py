"""The figures of the registered analyses' records (explorer/analyses/registry.py), by the record's type: a new
analysis that returns a HeadScores needs no figure of its own."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.analyses.records import HeadScores
from explorer.figures.common import SMALLEST_FONT, font, title_height, wrapped_title

PRINTED_UP_TO = 16      # heads and layers a side: up to this, each cell prints its number (a class cannot hover)


def head_scores_figure(record: HeadScores, title: str = "") -> go.Figure:
    """A layers × heads map for each attention kind, one colour scale for all (the kinds compare), each cell printing
    its number while they fit; a pruned head's cell blank."""
    kinds = list(record.scores)
    layers = max(values.shape[0] for values in record.scores.values())
    heads = max(values.shape[1] for values in record.scores.values())
    printed = max(layers, heads) <= PRINTED_UP_TO
    cell = font(44 if printed else 18)
    gap = font(14) + font(12) + 30                      # a kind's title and its head labels above its cells
    panels = [record.scores[kind].shape[0] * cell for kind in kinds]
    plot = sum(panels) + gap * (len(kinds) - 1)
    figure = make_subplots(rows=len(kinds), cols=1, subplot_titles=[kind.heading for kind in kinds],
                           row_heights=panels, vertical_spacing=gap / plot if len(kinds) > 1 else 0.0)
    finite = np.concatenate([values[np.isfinite(values)] for values in record.scores.values()])
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
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
    figure.update_annotations(yshift=font(12) + 14, font=dict(size=font(14)))    # kind titles over their head labels
    width = heads * cell + font(60) + 110               # the layer labels, the colour bar and its ticks
    note = f"The mean over {record.sentences} sentences" if record.sentences > 1 else "On this sentence"
    reading = record.reading[:1].upper() + record.reading[1:]
    heading = wrapped_title(f"{title or record.measure}<br><sup>{note}. {reading}</sup>", max(width, 420) - 20)
    top = title_height(heading) + gap + 8
    unit = record.measure[record.measure.find("(") + 1:-1] if record.measure.endswith(")") else record.measure
    figure.update_layout(title=dict(text=heading, y=1.0, yanchor="top", yref="container", pad=dict(t=16)),
                         coloraxis=dict(colorscale="Viridis", cmin=low, cmax=high, colorbar=dict(
                             title=dict(text="<br>".join(textwrap.wrap(unit, 12)), font=dict(size=font(12))),
                             thickness=12, tickfont=dict(size=font(12)))),
                         width=max(width, 420), height=plot + top + 20, margin=dict(l=10, r=10, t=top, b=10),
                         plot_bgcolor="white")
    return figure


FIGURES = {HeadScores: head_scores_figure}


def figure_of(record, title: str = "") -> go.Figure:
    """The figure of a registered analysis's record, by its type."""
    return FIGURES[type(record)](record, title)
