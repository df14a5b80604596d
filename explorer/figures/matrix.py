"""One matrix of numbers ([query, key] weights, scores, a mask, a similarity), described once as a Matrix and drawn
by one function a backend: html_heatmap (explorer/figures/token_heatmap.py) for the page's first view, plotly_heatmap
(here) for the ⬇ HTML, the notebook and what a table cannot do (zoom into a long sentence, hover every cell).

What the description says, and how each backend reads it:

- numbers: WEIGHTS (attention weights or norms: blue, on the colour scale `scale`), SIGNED (scores: red–blue around
  0, −∞ blank), VALUES (other numbers, a similarity: blue from the least to the most) or MASK (may attend / blocked,
  two colours and a two-entry key);
- window: a long sentence's part drawn with every label (rows × columns), coloured on the whole matrix's range;
  `overview()` is the whole matrix beside it, its axes numbered every few positions, the window outlined;
- highlight: one key's column outlined;
- a matrix past the sizing rule (common.is_long) is drawn whole and zoomable, past the cells budget pooled, and its
  title says so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import (
    ABSOLUTE,
    ATTENTION_HOVER,
    NARROW_WIDTH,
    POOLED_HOVER,
    PRINTED_UP_TO,
    SMALLEST_FONT,
    display_tokens,
    font,
    hover_text,
    is_long,
    position_labels,
    projector_mode,
    projector_title,
    round_step,
    scale_note,
    text_width,
    title_height,
    token_axes,
    weight_range,
    wrapped_title,
)
from explorer.figures.focus import (
    OVERVIEW_SIDE,
    focus_cell,
    focus_room,
    numbered_positions,
    window_title,
)
from explorer.figures.pooling import block_labels, budget_factor, pooled_attention, pooled_mean, resolution_note

WEIGHTS, SIGNED, VALUES, MASK = "weights", "signed", "values", "mask"
NEG_INF_LABEL = "−∞"
MASK_STATES = ("blocked (0)", "may attend (1)")
MASK_COLOURS = [[0, "#3b3b3b"], [0.5, "#3b3b3b"], [0.5, "#9ecae1"], [1, "#9ecae1"]]


@dataclass(frozen=True)
class Matrix:
    values: np.ndarray                  # [rows, columns]
    rows: list[str]                     # raw tokens or names (escaped where drawn)
    columns: list[str]
    title: str = ""
    numbers: str = WEIGHTS              # WEIGHTS, SIGNED, VALUES or MASK (above)
    scale: str = ABSOLUTE               # WEIGHTS: the colour range (common.COLOUR_SCALES, or NORMS)
    window: tuple[range, range] | None = None       # the part drawn with every label: (rows, columns)
    overview_of_window: bool = False    # the whole matrix, numbered, the window outlined (overview())
    highlight: int | None = None        # a column outlined
    row_title: str = "query"
    column_title: str = "key"
    value_name: str = "value"           # SIGNED, VALUES: the hover's name of a cell's number
    printed: bool = False               # SIGNED, VALUES: each cell prints its number (WEIGHTS: in projector mode)
    units: str = "tokens"               # what a window's title counts
    pieces: list[list[str]] | None = None   # MASK of a batch: each row's own pieces, the columns numbered

    def overview(self) -> Matrix:
        """The whole matrix beside its window, the window outlined (a window is needed)."""
        return replace(self, overview_of_window=True)


def plotly_heatmap(matrix: Matrix) -> go.Figure:
    """The matrix as a plotly figure: the page's ⬇ HTML and the notebook's figure."""
    if matrix.numbers == MASK:
        return _mask(matrix)
    if matrix.numbers in (SIGNED, VALUES):
        return _numbers(matrix)
    if matrix.overview_of_window:
        return _overview(matrix)
    if matrix.window is not None:
        return _window(matrix)
    return _whole(matrix)


def _weights(matrix: Matrix, z, x, y, pooled: bool = False, low_high=None, **options) -> go.Heatmap:
    """The heatmap of weights every view draws: blue on the matrix's scale, hover naming query, key and weight."""
    low, high = low_high or weight_range(matrix.values, matrix.scale)
    return go.Heatmap(z=z, x=x, y=y, zmin=low, zmax=high, colorscale="Blues",
                      hovertemplate=hover_text(POOLED_HOVER if pooled else ATTENTION_HOVER, matrix.scale), **options)


def _printed_weights(printed: bool) -> dict:
    return dict(texttemplate="%{z:.2f}" if printed else None,
                textfont=dict(size=font(SMALLEST_FONT)) if printed else None)


def _whole(matrix: Matrix) -> go.Figure:
    """Every cell, queries as rows: a long sentence zoomable (common.token_axes), one past the cells budget (over 512
    tokens) pooled, and the title says so; at a projector up to PRINTED_UP_TO tokens each cell prints its weight."""
    pattern, title, highlight = matrix.values, matrix.title, matrix.highlight
    factor = budget_factor(*pattern.shape)
    if factor > 1:
        pattern = pooled_attention(pattern, factor, factor)
        title = f"{title}<br><sup>{resolution_note(factor, factor)}</sup>"
        highlight = None if highlight is None else highlight // factor
    queries, keys = block_labels(matrix.rows, factor), block_labels(matrix.columns, factor)
    if is_long(max(pattern.shape)):
        pattern = pattern.astype(np.float32)        # half the bytes of float64 (rollout's), as precise on screen
    printed = projector_mode() and max(pattern.shape) <= PRINTED_UP_TO
    figure = go.Figure(_weights(matrix, pattern, keys, queries, low_high=weight_range(pattern, matrix.scale),
                                **_printed_weights(printed), colorbar=dict(title=scale_note(pattern, matrix.scale))))
    figure.update_layout(title=title, margin=dict(l=10, r=10, t=60, b=10))
    token_axes(figure)
    if highlight is not None:
        figure.add_shape(type="rect", x0=highlight - 0.5, x1=highlight + 0.5, y0=-0.5, y1=len(queries) - 0.5,
                         line=dict(color="crimson", width=2))        # category indices
    return figure


def _window(matrix: Matrix) -> go.Figure:
    """A long sentence's focus window: every query and key labelled with its position in the sentence at the smallest
    font, a focus_cell() per token, so the figure is as wide as its window however long the sentence; coloured on the
    whole matrix's range, like the overview beside it; its title says which part of the sentence it shows."""
    rows, columns = matrix.window
    queries = position_labels(matrix.rows)[rows.start:rows.stop]
    keys = position_labels(matrix.columns)[columns.start:columns.stop]
    window = np.asarray(matrix.values[rows.start:rows.stop, columns.start:columns.stop])
    bar = scale_note(matrix.values, matrix.scale).replace("this figure", "whole pattern")    # the head's range
    figure = go.Figure(_weights(matrix, window, keys, queries, **_printed_weights(projector_mode()),
                                colorbar=dict(title=bar, thickness=12)))
    cell, size = focus_cell(), font(SMALLEST_FONT)
    axis = dict(type="category", tickmode="linear", tick0=0, dtick=1, tickfont=dict(size=size), automargin=True,
                title_font=dict(size=font(12)), showgrid=False)
    figure.update_xaxes(side="top", tickangle=-60, title_text="key", **axis)
    figure.update_yaxes(autorange="reversed", title_text="query", **axis)
    width = len(keys) * cell + focus_room(matrix.rows)
    subtitle = "<br>".join(f"<sup>{html.escape(line, quote=False)}</sup>" for line in
                           window_title(matrix.rows, matrix.columns, rows, columns, matrix.units))
    title = wrapped_title(f"{matrix.title}<br>{subtitle}", width - 20)
    key_room = int(max((text_width(key, size) for key in keys), default=0) * np.sin(np.radians(60))) + 12
    top = title_height(title) + key_room + font(12) + 12    # the title, the key labels, "key"
    figure.update_layout(title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=12)),
                         width=width, height=len(queries) * cell + top + 12,
                         margin=dict(l=10, r=10, t=top, b=10), plot_bgcolor="white")
    return figure


def _overview(matrix: Matrix, side: int = OVERVIEW_SIDE) -> go.Figure:
    """The whole matrix beside a focus window: its cells in `side` px, axes numbered every few positions instead of a
    label per token (hover names each cell's tokens), the window outlined; pooled past the cells budget, and then
    its title says so."""
    rows, columns = matrix.window
    pattern = matrix.values
    low_high = weight_range(pattern, matrix.scale)
    factor = budget_factor(*pattern.shape)
    title = f"The whole pattern: {len(matrix.rows)} × {len(matrix.columns)}"
    note = "the window outlined; hover names the tokens"
    if factor > 1:
        pattern = pooled_attention(pattern, factor, factor)
        note = f"{note}</sup><br><sup>{resolution_note(factor, factor, hover=False).split(':')[0]}"
    queries, keys = block_labels(matrix.rows, factor), block_labels(matrix.columns, factor)
    cell = side / max(len(queries), len(keys))
    figure = go.Figure(_weights(matrix, pattern, keys, queries, pooled=factor > 1, low_high=low_high,
                                showscale=False))
    size = font(12)
    for letter, labels, count in (("x", keys, len(matrix.columns)), ("y", queries, len(matrix.rows))):
        positions = numbered_positions(count, factor, cell * len(labels), text_width(str(count), size) + 12)
        figure.update_layout({f"{letter}axis": dict(
            type="category", tickmode="array", tickvals=[labels[p // factor] for p in positions],
            ticktext=[str(p) for p in positions], tickfont=dict(size=size), showgrid=False,
            title=dict(text="key position" if letter == "x" else "query position", font=dict(size=size)))})
    figure.update_xaxes(side="top")
    figure.update_yaxes(autorange="reversed")
    figure.add_shape(type="rect", x0=columns.start // factor - 0.5, x1=(columns.stop - 1) // factor + 0.5,
                     y0=rows.start // factor - 0.5, y1=(rows.stop - 1) // factor + 0.5,      # category indices
                     line=dict(color="crimson", width=2))
    left = text_width(str(len(matrix.rows)), size) + size + 30
    width = int(cell * len(keys)) + left + 20
    title = wrapped_title(f"{title}<br><sup>{note}</sup>", width - 20)
    # the title, the numbers and the axis title, with the axis title's own standoff (in projector mode the numbers
    # and the axis title grow, and without it the axis title ran over the title's second line)
    top = title_height(title) + 3 * size + 14
    figure.update_layout(title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=12)),
                         width=width, height=int(cell * len(queries)) + top + 12,
                         margin=dict(l=10, r=10, t=top, b=10), plot_bgcolor="white")
    return figure


def signed_cells(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(z with −inf as NaN, which plotly leaves blank; text with −inf written out)."""
    finite = np.isfinite(values)
    text = np.where(finite, np.vectorize(lambda v: f"{v:.2f}")(np.where(finite, values, 0)), NEG_INF_LABEL)
    return np.where(finite, values, np.nan), text


def _numbers(matrix: Matrix) -> go.Figure:
    """Any matrix of numbers: SIGNED red–blue around 0, VALUES blue; −∞ blank. A long one is drawn whole and
    zoomable, its values on hover from the cells themselves (no text per cell: 62,500 strings at 250 tokens); past
    the cells budget pooled (block means)."""
    values, title = matrix.values, matrix.title

    def hover(shown: str) -> str:
        return f"{matrix.row_title} %{{y}}<br>{matrix.column_title} %{{x}}<br>{matrix.value_name} %{{{shown}}}<extra></extra>"

    colours = dict(colorscale="RdBu_r", zmid=0) if matrix.numbers == SIGNED else dict(colorscale="Blues")
    if is_long(max(values.shape)):
        factor = budget_factor(*values.shape)
        if factor > 1:
            values = pooled_mean(values, factor, factor)
            title = f"{title}<br><sup>{resolution_note(factor, factor)}</sup>"
        z = np.where(np.isfinite(values), values, np.nan).astype(np.float32)
        trace = go.Heatmap(z=z, x=block_labels(matrix.columns, factor), y=block_labels(matrix.rows, factor),
                           hoverongaps=False, hovertemplate=hover("z:.2f"), **colours)
    else:
        z, text = signed_cells(values)
        trace = go.Heatmap(z=z, x=position_labels(matrix.columns), y=position_labels(matrix.rows), text=text,
                           texttemplate="%{text}" if matrix.printed else None,
                           hovertemplate=hover("text"), **colours)
    figure = go.Figure(trace)
    figure.update_layout(title=title, margin=dict(l=10, r=10, t=60, b=10))
    token_axes(figure, matrix.row_title, matrix.column_title, stretched=True)
    return figure


def _mask(matrix: Matrix) -> go.Figure:
    """A yes/no mask in two colours with a two-entry key (not a continuous 0–1 scale). A batch's (pieces given): the
    columns are numbered positions, and each cell names its own sentence's piece (printed while they fit, else on
    hover)."""
    mask, row_title, column_title = matrix.values, matrix.row_title, matrix.column_title
    allowed = mask.astype(bool)
    state = np.where(allowed, MASK_STATES[1], MASK_STATES[0])
    if matrix.pieces is not None:
        rows, columns = list(matrix.rows), [str(i) for i in range(mask.shape[1])]
        text = np.array([[display_tokens([p])[0] for p in row] for row in matrix.pieces], dtype=object)
        printed = mask.shape[1] <= 12      # wider, the pieces run into each other: on hover
        hover = f"{row_title} %{{y}}<br>position %{{x}}: %{{text}}<br>%{{customdata}}<extra></extra>"
    else:
        rows, columns = position_labels(matrix.rows), position_labels(matrix.columns)
        text, printed = state, False
        hover = f"{row_title} %{{y}}<br>{column_title} %{{x}}<br>%{{customdata}}<extra></extra>"
    long = is_long(mask.shape[1])
    if long and matrix.pieces is None:
        # No words per cell (62,500 at 250 tokens): the hover reads the cell's own 1 or 0.
        text = state = None
        hover = f"{row_title} %{{y}}<br>{column_title} %{{x}}<br>%{{z:.0f}} (1: may attend, 0: blocked)<extra></extra>"
    gap = 0 if long else 1              # a gap a cell would hide a third of a long mask's few px a cell
    figure = go.Figure(go.Heatmap(
        z=allowed.astype(np.uint8 if long else float), x=columns, y=rows, zmin=0, zmax=1, xgap=gap, ygap=gap,
        colorscale=MASK_COLOURS, text=text, customdata=state, texttemplate="%{text}" if printed else None,
        textfont=dict(size=font(SMALLEST_FONT)),
        # The two-entry key under the cells, across: beside them it took 130 px of a projector's column from the
        # cells, and the key labels ran together.
        colorbar=dict(tickvals=[0.25, 0.75], ticktext=list(MASK_STATES), thickness=14, len=0.5,
                      orientation="h", x=0, xanchor="left", y=0, yanchor="top", ypad=12),
        hovertemplate=hover))
    figure.update_layout(title=matrix.title, margin=dict(l=10, r=10, t=60, b=60))
    token_axes(figure, row_title, column_title, stretched=True)
    figure.update_layout(height=figure.layout.height + 50)          # the key under the cells
    if matrix.pieces is not None:
        # Positions numbered every few where a projector's column has no room for each (hover names every cell);
        # a sentence a row of 45 px, not 160 (the rows of a token figure's 320 px at least).
        figure.update_xaxes(dtick=round_step(len(columns), NARROW_WIDTH - 150, room=16))
        figure.update_layout(title_text=projector_title(matrix.title)[0])     # no "n × n tokens" zoom note
        figure.update_layout(height=figure.layout.margin.t + 45 * len(rows) + 80)
    return figure
