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


GRID_HOVER = "%{y}<br>%{x}<br>weight %{z:.3f}<extra></extra>"


def heads_grid(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str = "") -> go.Figure:
    """All heads of all layers, pattern [layers, heads, query, key], as a layers × heads grid of heatmaps.

    Drawn as one heatmap: the heads' matrices tiled with blank (NaN) rows and columns between them, on one pair
    of category axes whose labels name layer/head and token ("L1 · 3 man", "H5 · 0 ▁A"), so hovering any cell
    says which head, query and key it is. (One subplot per head — 24 axes, 24 images — took the browser about
    0.4 s to redraw; one image takes a small fraction of that.)
    """
    layers, heads, n_queries, n_keys = pattern.shape
    gap = 1 + max(n_queries, n_keys) // 8
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    grid = np.full((layers * (n_queries + gap) - gap, heads * (n_keys + gap) - gap), np.nan)
    for layer in range(layers):
        for head in range(heads):
            top, left = layer * (n_queries + gap), head * (n_keys + gap)
            grid[top:top + n_queries, left:left + n_keys] = pattern[layer, head]
    # Category labels must be unique: gaps get distinct runs of spaces.
    rows = tiled_labels(queries, layers, gap, "L")
    columns = tiled_labels(keys, heads, gap, "H")
    figure = go.Figure(go.Heatmap(z=grid, x=columns, y=rows, zmin=0, zmax=1, colorscale="Blues", showscale=False,
                                  hoverongaps=False, hovertemplate=GRID_HOVER))
    figure.update_xaxes(type="category", side="top", showgrid=False, tickvals=[columns[h * (n_keys + gap) + n_keys // 2]
                        for h in range(heads)], ticktext=[f"head {h}" for h in range(heads)])
    figure.update_yaxes(type="category", autorange="reversed", showgrid=False, tickvals=[
                        rows[layer * (n_queries + gap) + n_queries // 2] for layer in range(layers)],
                        ticktext=[f"layer {layer}" for layer in range(layers)])
    size = 150 if heads > 2 else 260
    figure.update_layout(title=title, height=size * layers + 80, margin=dict(l=10, r=10, t=70, b=10),
                         plot_bgcolor="white")
    return figure


def tiled_labels(labels: list[str], blocks: int, gap: int, prefix: str) -> list[str]:
    """Axis categories for `blocks` copies of labels with `gap` blank categories between copies."""
    tiled = []
    for block in range(blocks):
        if block:
            tiled += [" " * (block * gap + g) for g in range(1, gap + 1)]
        tiled += [f"{prefix}{block} · {label}" for label in labels]
    return tiled


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
                                    showscale=head == 0, colorbar=dict(title="weight", thickness=10, len=0.6),
                                    hovertemplate=ATTENTION_HOVER), row=row, col=column)
        box = dict(type="rect", line=dict(color="crimson", width=2), row=row, col=column)
        if focus_row is not None:
            figure.add_shape(x0=-0.5, x1=len(keys) - 0.5, y0=focus_row - 0.5, y1=focus_row + 0.5, **box)
        if focus_column is not None:
            figure.add_shape(x0=focus_column - 0.5, x1=focus_column + 0.5, y0=-0.5, y1=len(queries) - 0.5, **box)
    # Key labels under the bottom row of panels, query labels beside the first column: every model readable.
    figure.update_xaxes(type="category", showticklabels=False, tickangle=-60, tickfont=dict(size=9))
    figure.update_xaxes(showticklabels=True, row=rows)
    figure.update_yaxes(type="category", autorange="reversed", showticklabels=False, tickfont=dict(size=9))
    figure.update_yaxes(showticklabels=True, col=1)
    longest = max((len(k) for k in keys), default=4)
    figure.update_layout(title=title, height=120 + 6 * longest + rows * max(220, 14 * len(queries)),
                         margin=dict(l=10, r=10, t=70, b=10 + 6 * longest))
    return figure
