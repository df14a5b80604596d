"""Figures of head roles: the layers × heads map, offset histograms, syntactic evidence."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

ROLE_COLOURS = [("none", "#e8e8e8"), ("positional", "#4c78a8"), ("syntactic", "#54a24b"), ("rare-token", "#e45756"),
                ("several", "#b279a2")]


def role_index(roles: list[str]) -> int:
    if not roles:
        return 0
    if len(roles) > 1:
        return 4
    return [name for name, _ in ROLE_COLOURS].index(roles[0])


def role_map(entries: list[dict], layers: int, heads: int, importance: dict[str, float], title: str) -> go.Figure:
    """Heads of one kind as a layers × heads grid coloured by role; cells show confidence and importance."""
    z = np.zeros((layers, heads))
    text = np.empty((layers, heads), dtype=object)
    for entry in entries:
        layer, head = entry["layer"], entry["head"]
        z[layer, head] = role_index(entry["roles"])
        share = importance.get(entry["spec"])
        text[layer, head] = (f"{entry['spec']}<br>{', '.join(entry['roles']) or 'no role'}<br>conf {entry['confidence']:.2f}"
                             + (f"<br>imp {share:.2f}" if share is not None else ""))
    count = len(ROLE_COLOURS)
    colourscale = []
    for i, (_, colour) in enumerate(ROLE_COLOURS):
        colourscale += [[i / count, colour], [(i + 1) / count, colour]]
    figure = go.Figure(go.Heatmap(
        z=z, text=text, texttemplate="%{text}", textfont=dict(size=10), x=[f"head {h}" for h in range(heads)],
        y=[f"layer {l}" for l in range(layers)], zmin=-0.5, zmax=count - 0.5, colorscale=colourscale,
        hovertemplate="%{text}<extra></extra>",
        colorbar=dict(tickvals=list(range(count)), ticktext=[name for name, _ in ROLE_COLOURS], title="role")))
    figure.update_layout(title=title, height=120 + 90 * layers, margin=dict(l=10, r=10, t=50, b=10))
    figure.update_xaxes(type="category", side="top")
    figure.update_yaxes(type="category", autorange="reversed")
    return figure


def offset_histogram(entry: dict) -> go.Figure:
    histogram = entry["positional"]["histogram"]
    labels = [("≤" if k == min(histogram, key=int) else "≥" if k == max(histogram, key=int) else "") + k for k in histogram]
    figure = go.Figure(go.Bar(x=labels, y=list(histogram.values()),
                              hovertemplate="offset %{x}<br>share of tokens %{y:.3f}<extra></extra>"))
    figure.update_layout(title=f"{entry['spec']}: where its largest weight sits, relative to the query "
                               f"(top: {entry['positional']['offset']:+d}, {entry['positional']['share']:.0%})",
                         height=300, yaxis=dict(range=[0, 1], title="share of tokens"), xaxis=dict(title="key − query"),
                         margin=dict(l=10, r=10, t=50, b=10))
    figure.update_xaxes(type="category")
    return figure


def syntactic_evidence(entry: dict) -> go.Figure:
    labels, accuracy, baseline, counts = [], [], [], []
    for relation, directions in entry["syntactic"].items():
        for direction, score in directions.items():
            labels.append(f"{relation} {direction}")
            accuracy.append(score["accuracy"]), baseline.append(score["baseline"]), counts.append(score["count"])
    figure = go.Figure([
        go.Bar(x=labels, y=accuracy, name="this head", customdata=counts,
               hovertemplate="%{x}<br>accuracy %{y:.3f}<br>%{customdata} arcs<extra></extra>"),
        go.Bar(x=labels, y=baseline, name="positional baseline",
               hovertemplate="%{x}<br>baseline %{y:.3f}<extra></extra>")])
    figure.update_layout(title=f"{entry['spec']}: how often its top word is the other end of the arc",
                         barmode="group", height=360, yaxis=dict(range=[0, 1], title="accuracy"),
                         margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=1.1))
    figure.update_xaxes(tickangle=-45)
    return figure
