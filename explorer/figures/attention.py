"""Attention heatmaps: one head, every head of every layer (small multiples), averages and rollout."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.figures.common import position_labels, token_axes

ATTENTION_HOVER = "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"


def attention_heatmap(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str = "",
                      highlight: int | None = None) -> go.Figure:
    """pattern [query, key] → heatmap, queries as rows; hover shows query token, key token and weight.

    highlight: a key position to outline (e.g. the token a user focuses on).
    """
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    figure = go.Figure(go.Heatmap(z=pattern, x=keys, y=queries, zmin=0, zmax=1, colorscale="Blues",
                                  hovertemplate=ATTENTION_HOVER, colorbar=dict(title="weight")))
    figure.update_layout(title=title, height=max(320, 22 * len(queries) + 140), margin=dict(l=10, r=10, t=60, b=10))
    token_axes(figure)
    if highlight is not None:
        figure.add_shape(type="rect", x0=highlight - 0.5, x1=highlight + 0.5, y0=-0.5, y1=len(queries) - 0.5,  # category index
                         line=dict(color="crimson", width=2))
    return figure


def heads_grid(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str = "") -> go.Figure:
    """All heads of all layers, pattern [layers, heads, query, key], as a layers × heads grid of heatmaps."""
    layers, heads = pattern.shape[:2]
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    figure = make_subplots(rows=layers, cols=heads, horizontal_spacing=0.01, vertical_spacing=0.04,
                           subplot_titles=[f"L{layer} H{head}" for layer in range(layers) for head in range(heads)])
    for layer in range(layers):
        for head in range(heads):
            figure.add_trace(go.Heatmap(z=pattern[layer, head], x=keys, y=queries, zmin=0, zmax=1,
                                        colorscale="Blues", showscale=False, hovertemplate=ATTENTION_HOVER),
                             row=layer + 1, col=head + 1)
    figure.update_xaxes(showticklabels=False, type="category")
    figure.update_yaxes(showticklabels=False, type="category", autorange="reversed")
    size = 150 if heads > 2 else 260
    figure.update_layout(title=title, height=size * layers + 80, margin=dict(l=10, r=10, t=70, b=10))
    return figure


def layer_heads(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str,
                focus_row: int | None = None, focus_column: int | None = None, per_row: int = 4) -> go.Figure:
    """Every head of one layer, pattern [heads, query, key], with a focus token's row/column outlined in each."""
    heads = pattern.shape[0]
    rows, columns = (heads + per_row - 1) // per_row, min(heads, per_row)
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    figure = make_subplots(rows=rows, cols=columns, subplot_titles=[f"head {h}" for h in range(heads)],
                           horizontal_spacing=0.02, vertical_spacing=0.08)
    for head in range(heads):
        row, column = head // per_row + 1, head % per_row + 1
        figure.add_trace(go.Heatmap(z=pattern[head], x=keys, y=queries, zmin=0, zmax=1, colorscale="Blues",
                                    showscale=False, hovertemplate=ATTENTION_HOVER), row=row, col=column)
        box = dict(type="rect", line=dict(color="crimson", width=2), row=row, col=column)
        if focus_row is not None:
            figure.add_shape(x0=-0.5, x1=len(keys) - 0.5, y0=focus_row - 0.5, y1=focus_row + 0.5, **box)
        if focus_column is not None:
            figure.add_shape(x0=focus_column - 0.5, x1=focus_column + 0.5, y0=-0.5, y1=len(queries) - 0.5, **box)
    figure.update_xaxes(type="category", showticklabels=heads == 1, tickangle=-60)
    figure.update_yaxes(type="category", autorange="reversed", showticklabels=False)
    figure.update_yaxes(showticklabels=True, col=1)
    figure.update_layout(title=title, height=120 + rows * max(220, 14 * len(queries)), margin=dict(l=10, r=10, t=70, b=10))
    return figure
