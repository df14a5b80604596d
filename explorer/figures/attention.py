"""Attention heatmaps: one head, every head of every layer (small multiples), averages and rollout."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.figures.common import display_tokens, hover_pairs, token_axes

ATTENTION_HOVER = "query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.3f}<extra></extra>"


def attention_heatmap(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str = "",
                      highlight: int | None = None) -> go.Figure:
    """pattern [query, key] → heatmap, queries as rows; hover shows query token, key token and weight.

    highlight: a key position to outline (e.g. the token a user focuses on).
    """
    queries, keys = display_tokens(query_tokens), display_tokens(key_tokens)
    figure = go.Figure(go.Heatmap(z=pattern, x=list(range(len(keys))), y=list(range(len(queries))),
                                  customdata=hover_pairs(queries, keys), zmin=0, zmax=1, colorscale="Blues",
                                  hovertemplate=ATTENTION_HOVER, colorbar=dict(title="weight")))
    figure.update_layout(title=title, height=max(320, 22 * len(queries) + 140), margin=dict(l=10, r=10, t=60, b=10))
    token_axes(figure, queries, keys)
    if highlight is not None:
        figure.add_shape(type="rect", x0=highlight - 0.5, x1=highlight + 0.5, y0=-0.5, y1=len(queries) - 0.5,
                         line=dict(color="crimson", width=2))
    return figure


def heads_grid(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str = "") -> go.Figure:
    """All heads of all layers, pattern [layers, heads, query, key], as a layers × heads grid of heatmaps."""
    layers, heads = pattern.shape[:2]
    queries, keys = display_tokens(query_tokens), display_tokens(key_tokens)
    figure = make_subplots(rows=layers, cols=heads, horizontal_spacing=0.01, vertical_spacing=0.04,
                           subplot_titles=[f"L{layer} H{head}" for layer in range(layers) for head in range(heads)])
    customdata = hover_pairs(queries, keys)
    for layer in range(layers):
        for head in range(heads):
            figure.add_trace(go.Heatmap(z=pattern[layer, head], customdata=customdata, zmin=0, zmax=1,
                                        colorscale="Blues", showscale=False, hovertemplate=ATTENTION_HOVER),
                             row=layer + 1, col=head + 1)
    figure.update_xaxes(showticklabels=False)
    figure.update_yaxes(showticklabels=False, autorange="reversed")
    size = 150 if heads > 2 else 260
    figure.update_layout(title=title, height=size * layers + 80, margin=dict(l=10, r=10, t=70, b=10))
    return figure
