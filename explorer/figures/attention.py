"""Every head at once: every head of every layer as one grid, every head of one layer as small multiples. One head's
matrix is a Matrix (explorer/figures/matrix.py)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.figures.common import (
    ABSOLUTE,
    ATTENTION_HOVER,
    CONTENT_WIDTH,
    PANEL_LABELS,
    POOLED_HOVER,
    POOLED_PANEL,
    cell_size,
    every_label,
    font,
    hover_text,
    is_long,
    label_room,
    position_labels,
    scale_note,
    title_height,
    weight_range,
)
from explorer.figures.pooling import block_labels, pool_factor, pooled_attention, resolution_note

GRID_HOVER = "%{y}<br>%{x}<br>weight %{z:.3f}<extra></extra>"
GRID_WIDTH = CONTENT_WIDTH - PANEL_LABELS       # px the heads of a layer share in the every-head grid


def heads_grid(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str = "",
               scale: str = ABSOLUTE, flags: dict[tuple[int, int], str] | None = None) -> go.Figure:
    """All heads of all layers, pattern [layers, heads, query, key], as a layers × heads grid of heatmaps: an
    overview whose tokens are named on hover (one head's heatmap above labels every token).

    Drawn as one heatmap: the heads' matrices tiled with blank (NaN) rows and columns between them, on one pair
    of category axes whose labels name layer/head and token ("L1 · 3 man", "H5 · 0 ▁A"), so hovering any cell
    says which head, query and key it is. (One subplot per head — 24 axes, 24 images — took the browser about
    0.4 s to redraw; one image takes a small fraction of that.)

    A long sentence's heads are pooled to a cell every 2 px of their share of the page's width (at most 64
    cells a side), and the title says so: 12 × 12 heads of 500 tokens would otherwise be 36 million cells.

    flags: (layer, head) → a short note ("sink 0.83"): that head is outlined and the note written on its top (past 8
    heads a row, too narrow for it: an S, or ✂ for "pruned", whose hover holds the note).
    """
    layers, heads, n_queries, n_keys = pattern.shape
    pooled = is_long(max(n_queries, n_keys))
    if pooled:
        tile = min(260, GRID_WIDTH // heads)          # px a head
        cells = min(64, tile // 2)
        row_factor, column_factor = pool_factor(n_queries, cells), pool_factor(n_keys, cells)
        pattern = pooled_attention(pattern, row_factor, column_factor)
        queries, keys = block_labels(query_tokens, row_factor), block_labels(key_tokens, column_factor)
        n_queries, n_keys = pattern.shape[2:]
        title = f"{title}<br><sup>{resolution_note(row_factor, column_factor)}</sup>"
    else:
        queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    gap = 1 + max(n_queries, n_keys) // 8
    grid = np.full((layers * (n_queries + gap) - gap, heads * (n_keys + gap) - gap), np.nan,
                   dtype=np.float32 if pooled else float)      # 4 bytes a cell suffice for colours and hover
    for layer in range(layers):
        for head in range(heads):
            top, left = layer * (n_queries + gap), head * (n_keys + gap)
            grid[top:top + n_queries, left:left + n_keys] = pattern[layer, head]
    # Category labels must be unique: gaps get distinct runs of spaces.
    rows = tiled_labels(queries, layers, gap, "L")
    columns = tiled_labels(keys, heads, gap, "H")
    low, high = weight_range(pattern, scale)
    figure = go.Figure(go.Heatmap(z=grid, x=columns, y=rows, zmin=low, zmax=high, colorscale="Blues",
                                  hoverongaps=False, hovertemplate=hover_text(POOLED_HOVER if pooled else GRID_HOVER, scale),
                                  colorbar=dict(title=scale_note(pattern, scale), thickness=12)))
    # Past 8 heads a row, a head is too narrow for "head 11" or a flag's note (12 heads at a projector's 1024 px:
    # ~28 px each): the columns are h0 … h11 and a flag is a mark whose hover holds its note.
    crowded = heads > 8
    figure.update_xaxes(type="category", side="top", showgrid=False, tickangle=0 if crowded else None,
                        tickvals=[columns[h * (n_keys + gap) + n_keys // 2] for h in range(heads)],
                        ticktext=[f"h{h}" if crowded else f"head {h}" for h in range(heads)])
    figure.update_yaxes(type="category", autorange="reversed", showgrid=False, tickvals=[
                        rows[layer * (n_queries + gap) + n_queries // 2] for layer in range(layers)],
                        ticktext=[f"layer {layer}" for layer in range(layers)])
    for (layer, head), note in (flags or {}).items():
        left, top = head * (n_keys + gap) - 0.5, layer * (n_queries + gap) - 0.5      # category indices
        figure.add_shape(type="rect", x0=left, x1=left + n_keys, y0=top, y1=top + n_queries,
                         line=dict(color="darkorange", width=2))
        figure.add_annotation(x=left + n_keys / 2, y=top, text=("✂" if note == "pruned" else "S") if crowded else note,
                              hovertext=note,
                              showarrow=False, yanchor="top", font=dict(size=11, color="black"),
                              bgcolor="rgba(255, 200, 120, 0.85)")
    # The title at the top, the head names under it: measured, so that a projector's larger type keeps them apart
    # (a fixed 70 px top put the title's descenders on "head 0 … head 7").
    figure.update_xaxes(tickfont=dict(size=font(12)))
    figure.update_yaxes(tickfont=dict(size=font(12)))
    top = title_height(title) + font(12) + 16
    heading = dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=12))
    if pooled:
        # Square cells, each head `tile` px wide (its share of GRID_WIDTH, 260 at most): the figure has its own
        # width, so one or two heads are not stretched over the page (and the layers with them down it).
        cell = tile / n_keys
        figure.update_layout(title=heading, height=int(cell * len(rows)) + top + 20,
                             width=int(cell * len(columns)) + PANEL_LABELS, margin=dict(l=10, r=10, t=top, b=10),
                             plot_bgcolor="white")
        return figure
    # Each head's square at least 150 px (260 for one or two heads a row), 4 px a token for long sentences.
    size = max(150 if heads > 2 else 260, 4 * n_queries)
    figure.update_layout(title=heading, height=size * layers + top + 10, margin=dict(l=10, r=10, t=top, b=10),
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
                focus_row: int | None = None, focus_column: int | None = None, per_row: int = 4,
                scale: str = ABSOLUTE) -> go.Figure:
    """Every head of one layer, pattern [heads, query, key], with a focus token's row/column outlined in each.

    Panels keep the sizing rule's cells (every token labelled): the figure is as wide and tall as its panels
    need, and the caller picks `per_row` for the room it has (panels_per_row). A long sentence's panels are
    pooled to POOLED_PANEL px (64 cells a side at most; the title says so), labelled every few blocks."""
    heads = pattern.shape[0]
    rows, columns = (heads + per_row - 1) // per_row, min(heads, per_row)
    pooled = is_long(max(pattern.shape[1:]))
    if pooled:
        cells = POOLED_PANEL // 4
        row_factor, column_factor = pool_factor(pattern.shape[1], cells), pool_factor(pattern.shape[2], cells)
        pattern = pooled_attention(pattern, row_factor, column_factor)
        queries, keys = block_labels(query_tokens, row_factor), block_labels(key_tokens, column_factor)
        focus_row = None if focus_row is None else focus_row // row_factor
        focus_column = None if focus_column is None else focus_column // column_factor
        title = f"{title}<br><sup>{resolution_note(row_factor, column_factor)}</sup>"
    else:
        queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    n_queries, n_keys = len(queries), len(keys)
    key_room = label_room(keys, n_keys, thinned=pooled)
    if pooled:
        cell = POOLED_PANEL / max(n_queries, n_keys)
        panel_height, panel_width = int(cell * n_queries), int(cell * n_keys)
    else:
        panel_height, panel_width = cell_size(n_queries) * n_queries, cell_size(n_keys) * n_keys
    row_height = panel_height + key_room + 30            # the panel, its key labels on top, its title
    note = 16 if pooled else 0                            # the title's second line
    height = rows * row_height + 70 + note
    figure = make_subplots(rows=rows, cols=columns, subplot_titles=[f"head {h}" for h in range(heads)],
                           horizontal_spacing=min(0.3, 40 / (columns * panel_width + 120)),
                           vertical_spacing=(key_room + 40) / height)
    low, high = weight_range(pattern, scale)
    # Traces and outlines are given their panel's axes here and added at once: plotly's add_trace/add_shape with
    # row and col look the panel up and re-validate the figure each time (a third of the figure's time).
    traces, shapes = [], []
    box = dict(type="rect", line=dict(color="crimson", width=2))
    for head in range(heads):
        axis = "" if head == 0 else str(head + 1)
        traces.append(go.Heatmap(z=pattern[head], x=keys, y=queries, zmin=low, zmax=high, colorscale="Blues",
                                 showscale=head == 0, xaxis=f"x{axis}", yaxis=f"y{axis}",
                                 hovertemplate=hover_text(POOLED_HOVER if pooled else ATTENTION_HOVER, scale),
                                 colorbar=dict(title=scale_note(pattern, scale), thickness=10, len=min(1, 400 / height),
                                               y=1, yanchor="top")))
        on_panel = dict(box, xref=f"x{axis}", yref=f"y{axis}")
        if focus_row is not None:
            shapes.append(dict(on_panel, x0=-0.5, x1=len(keys) - 0.5, y0=focus_row - 0.5, y1=focus_row + 0.5))
        if focus_column is not None:
            shapes.append(dict(on_panel, x0=focus_column - 0.5, x1=focus_column + 0.5, y0=-0.5, y1=len(queries) - 0.5))
    figure.add_traces(traces)
    figure.update_layout(shapes=shapes)
    # Key labels on top of every panel, query labels beside the first column: every token of every head named.
    figure.update_xaxes(**every_label(n_keys, panel_width if pooled else None, side="top", tickangle=-60))
    figure.update_yaxes(**every_label(n_queries, panel_height if pooled else None, autorange="reversed",
                                      showticklabels=False))
    figure.update_yaxes(showticklabels=True, col=1)
    # Subplot titles sit above the key labels, not on them.
    figure.update_annotations(yshift=key_room, font=dict(size=12))
    figure.update_layout(title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
                         height=height, width=columns * (panel_width + 40) + 160,
                         margin=dict(l=10, r=10, t=60 + key_room + note, b=10))
    return figure
