"""Figures of the machinery: masks, scores → softmax, positional encodings, the Q/K/V arithmetic."""

from __future__ import annotations

import textwrap

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.figures.common import (
    ABSOLUTE,
    NARROW_WIDTH,
    PANEL_LABELS,
    SMALLEST_FONT,
    ZOOM_PANEL,
    axis_length,
    cell_size,
    every_label,
    font,
    is_long,
    label_room,
    panels_per_row,
    position_labels,
    projector_title,
    scale_note,
    stretched_length,
    text_width,
    weight_range,
    zoom_note,
)
from explorer.figures.matrix import signed_cells
from explorer.figures.pooling import block_labels, budget_factor, pooled_attention, pooled_mean, resolution_note

TEXT_CELLS = 10      # print values in the cells up to this many tokens a side


NEAR_OFFSETS = 32


def relative_bias_figure(offsets: np.ndarray, values: np.ndarray, title: str) -> go.Figure:
    """Each head's bias [heads, offsets] along a numeric offset axis (key − query; negative = to the left)."""
    heads = [f"head {h}" for h in range(values.shape[0])]
    figure = go.Figure(go.Heatmap(z=values, x=offsets, y=heads, colorscale="RdBu_r", zmid=0,
                                  colorbar=dict(title="bias", thickness=14),
                                  hovertemplate="%{y}<br>offset %{x}<br>bias %{z:.3f}<extra></extra>"))
    figure.update_layout(title=title, height=max(260, 34 * len(heads) + 150), margin=dict(l=10, r=10, t=60, b=10))
    # Near offsets are where the buckets differ (exact there, logarithmic beyond): shown first; zoom out for all.
    near = NEAR_OFFSETS
    figure.update_xaxes(title="offset of the key from the query (key − query); zoom out for all offsets",
                        zeroline=False, range=[max(int(offsets.min()), -near) - 0.5, min(int(offsets.max()), near) + 0.5])
    figure.update_yaxes(autorange="reversed")
    return figure


def scores_mask_softmax(scores: np.ndarray, mask: np.ndarray, pattern: np.ndarray, queries: list[str],
                        keys: list[str], title: str = "", scale: str = ABSOLUTE) -> go.Figure:
    """Scaled scores + mask (0 or −∞) = masked scores → softmax, four panels side by side while their cells fit
    (panels_per_row), else two or one a row; every token labelled. One colour bar for the scores (the first and
    third panels share it), one for the weights.

    Each cell's value is printed only while the cells are big enough to read it (≤ TEXT_CELLS tokens);
    beyond that the colours carry the picture and hover gives the numbers. A long sentence: long_scores_figure.
    """
    n_queries, n_keys = len(queries), len(keys)
    if is_long(max(n_queries, n_keys)):
        return long_scores_figure(scores, mask, pattern, queries, keys, title, scale)
    additive = np.where(mask, 0.0, -np.inf)
    masked = np.where(mask, scores, -np.inf)
    panels = [("scaled scores", scores, "coloraxis"), ("+ mask", additive, None),
              ("= masked scores", masked, "coloraxis"), ("softmax → attention", pattern, "coloraxis2")]
    if mask.all():          # a mask that hides nothing: no blank "+ mask" panel, no copy of the scores
        panels = [panels[0], panels[3]]
    # As many a row as a projector's column holds at the sizing rule's cells (two 20-token panels side by side
    # ran their key labels together at 1024 px), the rows evened out (2 + 2, not 3 + 1).
    fit = panels_per_row(max(n_queries, n_keys), len(panels), width=NARROW_WIDTH)
    per_row = -(-len(panels) // -(-len(panels) // fit))
    grid_rows = (len(panels) + per_row - 1) // per_row
    # Values written in the cells only where each fits its cell at 11 px in a projector's column (the figure
    # stretches to it); else hover has them.
    cell_text = font(SMALLEST_FONT)
    cell_px = (NARROW_WIDTH - PANEL_LABELS) / per_row / n_keys
    longest = max(text_width(text, cell_text) for _, values, _ in panels for text in signed_cells(values)[1].flat)
    legible = max(n_queries, n_keys) <= TEXT_CELLS and longest + 4 <= cell_px
    rows, columns = position_labels(queries), position_labels(keys)
    key_room = label_room(columns, n_keys)
    panel_height = cell_size(n_queries) * n_queries
    height = grid_rows * (panel_height + key_room + 40) + 90
    figure = make_subplots(rows=grid_rows, cols=per_row, subplot_titles=[name for name, _, _ in panels],
                           horizontal_spacing=0.03, vertical_spacing=(key_room + 50) / height)
    for index, (name, values, axis) in enumerate(panels):
        row, column = index // per_row + 1, index % per_row + 1
        z, text = signed_cells(values)
        if axis is None:
            z = np.where(mask, 1.0, 0.0)  # draw allowed / blocked; the text says 0 or −∞
        figure.add_trace(go.Heatmap(z=z, x=columns, y=rows, text=text, texttemplate="%{text}" if legible else None,
                                    textfont=dict(size=cell_text), coloraxis=axis,
                                    **({} if axis else dict(zmin=0, zmax=1, colorscale="Greys_r", showscale=False)),
                                    hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{name}: %{{text}}<extra></extra>"),
                         row=row, col=column)
        figure.update_yaxes(**every_label(n_queries, autorange="reversed", showticklabels=column == 1),
                            row=row, col=column)
    figure.update_xaxes(**every_label(n_keys, stretched_length(n_keys), side="top", tickangle=-60))
    score_and_weight_bars(figure, scores, pattern, scale, height, key_room)
    note = "" if legible else "<br><sup>values on hover (too many tokens to print them in the cells)</sup>"
    if stretched_length(n_keys):
        note = zoom_note(n_queries, n_keys)
    figure.add_annotation(text=mask_key(mask), xref="paper", yref="paper",
                          x=0, y=1.0, yanchor="bottom", xanchor="left", yshift=key_room + 22, showarrow=False,
                          font=dict(size=11))
    # The title in lines of a projector's column, the cells moved down by the lines it gained.
    wrapped, extra = projector_title(title + note)
    figure.update_layout(title=dict(text=wrapped, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
                         height=height + extra, margin=dict(l=10, r=10, t=70 + extra + key_room + 20, b=10))
    return figure


NO_MASK = "no mask here: every key is visible"


def mask_key(mask: np.ndarray) -> str:
    """The line above the scores → softmax panels: how to read the mask panel, or that there is none."""
    if mask.all():
        return f"{NO_MASK}, so softmax reads the scaled scores as they are"
    return "mask: white = may attend (+0), black = blocked (−∞)"


def score_and_weight_bars(figure: go.Figure, scores: np.ndarray, pattern: np.ndarray, scale: str, height: int,
                          key_room: int) -> None:
    """The scores → softmax panels' two colour bars (scores diverging around 0, weights on the chosen scale) and
    the panel titles lifted above their key labels."""
    finite = scores[np.isfinite(scores)]
    limit = float(np.abs(finite).max()) if finite.size else 1.0
    low, high = weight_range(pattern, scale)
    bar = dict(thickness=12, len=min(0.45, 300 / height), x=1.01, xanchor="left")
    figure.update_layout(coloraxis=dict(colorscale="RdBu_r", cmid=0, cmin=-limit, cmax=limit,
                                        colorbar=dict(title="score", y=1, yanchor="top", **bar)),
                         coloraxis2=dict(colorscale="Blues", cmin=low, cmax=high,
                                         colorbar=dict(title=scale_note(pattern, scale), y=0, yanchor="bottom",
                                                       **bar)))
    for annotation in figure.layout.annotations:        # panel titles above their key labels
        annotation.update(yshift=key_room)


def long_scores_figure(scores: np.ndarray, mask: np.ndarray, pattern: np.ndarray, queries: list[str],
                       keys: list[str], title: str = "", scale: str = ABSOLUTE) -> go.Figure:
    """scores_mask_softmax for a long sentence: two ZOOM_PANEL px panels a row, each the whole matrix, their axes
    linked so a zoom into one zooms all four onto the same cells (where every label can be read); values on
    hover. Past the cells budget (four 275-token panels) the panels are pooled: scores and masked scores by
    block means of their finite values, the mask as the share of allowed cells, the weights as in every pooled
    attention figure (pooling.pooled_attention); the title says so."""
    factor = budget_factor(len(queries), len(keys), panels=4)
    additive_mask = mask.astype(np.uint8)             # 1 byte a cell: sent as it is when not pooled
    masked = np.where(mask, scores, -np.inf)
    if factor > 1:
        scores, masked = pooled_mean(scores, factor, factor), pooled_mean(masked, factor, factor)
        additive_mask = pooled_mean(additive_mask, factor, factor)
        pattern = pooled_attention(pattern, factor, factor)
    rows, columns = block_labels(queries, factor), block_labels(keys, factor)
    n_rows, n_columns = len(rows), len(columns)
    allowed = "share allowed %{z:.2f}" if factor > 1 else "%{z:.0f} (1: +0, may attend; 0: −∞, blocked)"
    panels = [("scaled scores", scores, "coloraxis", "score %{z:.3f}"),
              ("+ mask", additive_mask, None, allowed),
              ("= masked scores", masked, "coloraxis", "masked score %{z:.3f}"),
              ("softmax → attention", pattern, "coloraxis2", "weight %{z:.3f}")]
    if mask.all():          # a mask that hides nothing: no blank "+ mask" panel, no copy of the scores
        panels = [panels[0], panels[3]]
    grid_rows = (len(panels) + 1) // 2
    longest = max(n_rows, n_columns)           # the longer side ZOOM_PANEL px, square cells
    width, height_panel = ZOOM_PANEL * n_columns // longest, ZOOM_PANEL * n_rows // longest
    key_room = label_room(columns, n_columns, thinned=True)
    height = grid_rows * (height_panel + key_room + 40) + 110
    figure = make_subplots(rows=grid_rows, cols=2, subplot_titles=[name for name, _, _, _ in panels],
                           horizontal_spacing=0.03, vertical_spacing=(key_room + 50) / height if grid_rows > 1 else 0)
    for index, (_name, values, axis, value) in enumerate(panels):
        z = values if values.dtype == np.uint8 else np.where(np.isfinite(values), values, np.nan).astype(np.float32)
        figure.add_trace(go.Heatmap(z=z, x=columns, y=rows, coloraxis=axis, hoverongaps=False,
                                    **({} if axis else dict(zmin=0, zmax=1, colorscale="Greys_r", showscale=False)),
                                    hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{value}<extra></extra>"),
                         row=index // 2 + 1, col=index % 2 + 1)
    # One zoom for the four panels: every axis follows the first panel's.
    figure.update_xaxes(**every_label(n_columns, width, side="top", tickangle=-60))
    figure.update_yaxes(**every_label(n_rows, height_panel, autorange="reversed", showticklabels=False))
    figure.update_yaxes(showticklabels=True, col=1)
    for panel in range(2, len(panels) + 1):
        figure.layout[f"xaxis{panel}"].matches = "x"
        figure.layout[f"yaxis{panel}"].matches = "y"
    score_and_weight_bars(figure, scores, pattern, scale, height, key_room)
    together, blank = f"the {'four' if len(panels) == 4 else 'two'} panels zoom together", "blank = −∞"
    if mask.all():          # nothing is −∞
        note = (f"<br><sup>{resolution_note(factor, factor)}; {together}</sup>" if factor > 1 else
                zoom_note(len(queries), len(keys)).replace("</sup>", f"; {together}</sup>"))
    else:
        note = (f"<br><sup>{resolution_note(factor, factor)}; {blank}; {together}</sup>" if factor > 1 else
                zoom_note(len(queries), len(keys)).replace("</sup>", f"; {together}, {blank}</sup>"))
    figure.add_annotation(text=mask_key(mask), xref="paper", yref="paper",
                          x=0, y=1.0, yanchor="bottom", xanchor="left", yshift=key_room + 22, showarrow=False,
                          font=dict(size=11))
    figure.update_layout(title=dict(text=title + note, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
                         height=height, width=2 * (width + 60) + 200,
                         margin=dict(l=10, r=10, t=90 + key_room + 20, b=10))
    return figure


def positional_encoding_figure(halves: np.ndarray, tokens: list[str], title: str = "",
                               interleaved: bool = True) -> go.Figure:
    """PE for the sentence's positions, columns as [sin dims | cos dims] (positional.sin_cos_halves).
    interleaved: the model's own layout was sin, cos, sin, … (ours) rather than halves (Marian)."""
    half = halves.shape[1] // 2
    if interleaved:
        dims = [f"sin {2 * i}" for i in range(half)] + [f"cos {2 * i + 1}" for i in range(half)]
        axis = f"dimension: sin (even, 0…{2 * half - 2}) | cos (odd, 1…{2 * half - 1})"
    else:
        dims = [f"sin {i}" for i in range(half)] + [f"cos {half + i}" for i in range(half)]
        axis = f"dimension: sin (0…{half - 1}) | cos ({half}…{2 * half - 1})"
    if is_long(len(tokens)):
        return long_rows_figure([halves], tokens, title, [dims], [None], "PE", axis, zrange=(-1, 1),
                                separator=half)
    rows = position_labels(tokens)
    figure = go.Figure(go.Heatmap(z=halves, x=dims, y=rows, colorscale="RdBu_r", zmid=0, zmin=-1, zmax=1,
                                  hovertemplate="position %{y}<br>%{x}<br>PE %{z:.3f}<extra></extra>"))
    figure.add_vline(x=half - 0.5, line=dict(color="black", width=2))
    figure.update_layout(title=title, height=max(300, cell_size(len(rows)) * len(rows) + 140),
                         margin=dict(l=10, r=10, t=60, b=10))
    figure.update_xaxes(title=axis, showticklabels=False, type="category")
    figure.update_yaxes(**every_label(len(rows), autorange="reversed", title="position"))
    return figure


def long_rows_figure(matrices: list[np.ndarray], tokens: list[str], title: str, columns: list[list[str] | None],
                     panel_titles: list[str | None], value: str, axis_title: str = "",
                     zrange: tuple[float, float] | None = None, separator: int | None = None) -> go.Figure:
    """Matrices [positions, dimensions] side by side for a long sentence: LONG_AXIS px tall whatever the length,
    positions labelled every few (every one once zoomed in; the panels zoom together), pooled by block means past
    the cells budget (the title says so). columns: each panel's column names (None: numbered); separator: a
    column index to draw a line before (PE's sin | cos halves, kept apart when pooled)."""
    positions, dims = matrices[0].shape
    factor = budget_factor(positions, dims, panels=len(matrices))
    rows = block_labels(tokens, factor)
    if zrange is None:
        limit = float(max(np.abs(m).max() for m in matrices)) or 1.0
        zrange = (-limit, limit)
    figure = make_subplots(rows=1, cols=len(matrices), horizontal_spacing=0.03,
                           subplot_titles=[t or "" for t in panel_titles])
    for index, (values, names) in enumerate(zip(matrices, columns), start=1):
        if factor > 1 and separator:            # the halves pooled apart: no block mixes a sine with a cosine
            values = np.concatenate([pooled_mean(values[:, :separator], factor, factor),
                                     pooled_mean(values[:, separator:], factor, factor)], axis=1)
            names = None if names is None else (block_labels(names[:separator], factor)
                                                + block_labels(names[separator:], factor))
        elif factor > 1:
            values = pooled_mean(values, factor, factor)
            names = None if names is None else block_labels(names, factor)
        x = names if names is not None else [f"{d}" if factor == 1 else f"{d}–{min(d + factor, dims) - 1}"
                                             for d in range(0, dims, factor)]
        figure.add_trace(go.Heatmap(z=values.astype(np.float32), x=x, y=rows, colorscale="RdBu_r", zmid=0,
                                    zmin=zrange[0], zmax=zrange[1], showscale=index == len(matrices),
                                    hovertemplate=f"position %{{y}}<br>dimension %{{x}}<br>{value} %{{z:.3f}}"
                                                  "<extra></extra>"),
                         row=1, col=index)
        figure.update_xaxes(type="category", showticklabels=False, title=axis_title or "dimension", row=1, col=index)
        figure.update_yaxes(**every_label(len(tokens), autorange="reversed", showticklabels=index == 1,
                                          title="position" if index == 1 else None), row=1, col=index)
        if index > 1:
            figure.layout[f"yaxis{index}"].matches = "y"
    if separator:
        position = separator if factor == 1 else -(-separator // factor)
        figure.add_vline(x=position - 0.5, line=dict(color="black", width=2))
    note = (f"<br><sup>{resolution_note(factor, factor, ('positions', 'dimensions'))}; hover for its "
            "positions</sup>" if factor > 1 else zoom_note(len(tokens)))
    figure.update_layout(title=title + note, height=axis_length(len(tokens)) + 170,
                         margin=dict(l=10, r=10, t=100, b=10))
    return figure


def learned_positions_figure(table: np.ndarray, tokens: list[str], title: str = "") -> go.Figure:
    """A learned position-embedding table, one row per position of the sentence."""
    if is_long(len(tokens)):
        return long_rows_figure([table], tokens, title, [None], [None], "value",
                                f"dimension (0…{table.shape[1] - 1})")
    rows = position_labels(tokens)
    limit = float(np.abs(table).max()) or 1.0
    figure = go.Figure(go.Heatmap(z=table, y=rows, colorscale="RdBu_r", zmid=0, zmin=-limit, zmax=limit,
                                  hovertemplate="position %{y}<br>dimension %{x}<br>%{z:.3f}<extra></extra>"))
    figure.update_layout(title=title, height=max(300, cell_size(len(rows)) * len(rows) + 140),
                         margin=dict(l=10, r=10, t=60, b=10))
    figure.update_xaxes(title=f"dimension (0…{table.shape[1] - 1})")
    figure.update_yaxes(**every_label(len(rows), autorange="reversed", title="position"))
    return figure


def embedding_sum_figure(embedding: np.ndarray, positional: np.ndarray, total: np.ndarray, tokens: list[str],
                         title: str = "", titles: tuple[str, str, str] = ("token embedding × √d_model",
                                                                          "+ positional encoding", "= input to layer 0")
                         ) -> go.Figure:
    """token embedding × √d_model + positional encoding = the encoder's input, as the model sums them
    (titles: the panels' names, for models that combine them otherwise)."""
    if is_long(len(tokens)):
        limit = float(np.abs(total).max())
        return long_rows_figure([embedding, positional, total], tokens, title, [None] * 3, list(titles), "value",
                                zrange=(-limit, limit))
    # Panel titles in lines of a third of a projector's column: on one line they ran into each other there.
    figure = make_subplots(rows=1, cols=3, horizontal_spacing=0.03,
                           subplot_titles=["<br>".join(textwrap.wrap(name, 15)) for name in titles])
    rows = position_labels(tokens)
    limit = float(np.abs(total).max())
    for column, values in enumerate((embedding, positional, total), start=1):
        figure.add_trace(go.Heatmap(z=values, y=rows, colorscale="RdBu_r", zmid=0, zmin=-limit, zmax=limit,
                                    showscale=column == 3, hovertemplate="%{y}<br>dimension %{x}<br>%{z:.3f}<extra></extra>"),
                         row=1, col=column)
        figure.update_yaxes(**every_label(len(rows), showticklabels=column == 1, autorange="reversed"), row=1, col=column)
    figure.update_layout(title=title, height=max(300, cell_size(len(rows)) * len(rows) + 180),
                         margin=dict(l=10, r=10, t=110, b=10))
    return figure
