"""A long sentence's attention, readable: a window of the pattern drawn whole with every label (focus), the whole
pattern beside it as an overview with the window marked, and every head of several models as small tiles
(Compare). The window and the overview are a Matrix's (explorer/figures/matrix.py); here is how big a window is
and what its title says. The pages draw the overview and the tiles as images (explorer/figures/thumbnails.py); the
plotly ones are their ⬇ HTML, whose hover names each cell's tokens. One token's rows across models side by side:
explorer/figures/focus_strips.py."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import (
    ABSOLUTE,
    ATTENTION_HOVER,
    NARROW_WIDTH,
    POOLED_HOVER,
    PRINTED_UP_TO,
    PROJECTOR_COLUMN,
    SMALLEST_FONT,
    dense_cell,
    font,
    hover_text,
    is_long,
    position_labels,
    printed_cell,
    projector_mode,
    scale_note,
    text_width,
    title_height,
    weight_range,
    wrapped_title,
)
from explorer.figures.pooling import block_labels, pool_factor, pooled_attention, resolution_note
from explorer.figures.windows import window_text

# A long sentence's focus window. Past what NARROW_WIDTH holds at dense_cell() a token, a token × token heatmap
# cannot label every token in a projector's column (rotated key labels ran into each other from ~23 tokens at
# 1024 px): the page draws a window of the sentence whole, every label at the smallest font, beside an overview
# of the whole pattern without token labels (its ⬇ HTML's hover names each cell; the CSV has every weight).
FOCUS_BAR = 80          # px right of a focus window's cells: its thin colour bar, tick labels and two-line title
OVERVIEW_SIDE = 270     # px of the longer side of the overview's cells: beside the window in a 1400 px window


def focus_room(query_tokens: list[str]) -> int:
    """Pixels a focus window's figure takes beside its cells: the longest query label at the smallest font (of
    the whole sentence, so the window keeps its size as it moves), the axis title, the colour bar, the margins."""
    longest = max((text_width(label, font(SMALLEST_FONT)) for label in position_labels(query_tokens)), default=0)
    return longest + font(12) + 12 + FOCUS_BAR + 20


def focus_cell() -> int:
    """Px a token of a focus window: the densest cell that labels every token, or in projector mode a cell that
    prints its weight (a class cannot hover)."""
    return printed_cell() if projector_mode() else dense_cell()


def focus_size(query_tokens: list[str]) -> int:
    """Tokens a side of a focus window: as many keys as fit NARROW_WIDTH px at dense_cell() each beside the query
    labels (24 of the 45-word sentence's 49 pieces; fewer beside long German pieces); in projector mode as many
    as fit the folded sidebar's PROJECTOR_COLUMN with each cell printing its weight (16), PRINTED_UP_TO at most;
    8 at least. A sentence no longer than this is drawn whole (attention_heatmap)."""
    if projector_mode():
        return max(8, min(PRINTED_UP_TO, (PROJECTOR_COLUMN - focus_room(query_tokens)) // printed_cell()))
    return max(8, (NARROW_WIDTH - focus_room(query_tokens)) // dense_cell())


def drawn_whole(query_tokens: list[str], key_tokens: list[str]) -> bool:
    """Whether a [query, key] heatmap is drawn whole rather than as a focus window: it fits the window's size, or
    in projector mode it has at most PRINTED_UP_TO tokens a side (drawn at the column's width, every weight
    printed, as the class reads it)."""
    longest = max(len(query_tokens), len(key_tokens))
    return longest <= focus_size(query_tokens) or (projector_mode() and longest <= PRINTED_UP_TO)


def window_title(query_tokens: list[str], key_tokens: list[str], rows: range, columns: range,
                 units: str = "tokens") -> list[str]:
    """Which part of the sentence a focus window shows, for its title's second line(s) (raw text: escaped where
    it is written)."""
    def span(shown: range, count: int) -> str:
        return f"{shown.start}–{shown.stop - 1} of {count}"

    if query_tokens == key_tokens and rows == columns:
        return [f"{units} {span(rows, len(query_tokens))}: “{window_text(key_tokens, columns)}”"]
    return [f"queries {span(rows, len(query_tokens))}, keys {span(columns, len(key_tokens))}",
            f"keys: “{window_text(key_tokens, columns)}”"]


def numbered_positions(count: int, factor: int, pixels: float, room: int) -> range:
    """The positions an overview of `count` tokens numbers along `pixels` px, its numbers `room` px apart; pooled by
    `factor`, each a block's first position (its label starts with it)."""
    step = tick_step(count, pixels, room)
    return range(0, count, factor * -(-step // factor))


def tick_step(count: int, pixels: float, room: int = 36) -> int:
    """Every how many positions an overview numbers its axis: the smallest of 1, 2, 5, 10, 20, 50, … that keeps
    the numbers `room` px apart on `pixels` px."""
    step = 1
    while step * pixels / max(count, 1) < room:
        step = step * 5 // 2 if str(step).startswith("2") else step * 2
    return step


def models_overview(patterns: dict[str, np.ndarray], query_tokens: dict[str, list[str]],
                    key_tokens: dict[str, list[str]], title: str, focus_row: int | None = None,
                    focus_column: int | None = None, scale: str = ABSOLUTE, width: int | None = None,
                    per_row: int = 4) -> go.Figure:
    """Every head of several models as whole patterns, small tiles without token labels (hover names each cell's
    model, head and tokens): patterns {model: [heads, query, key]}, each model's heads `per_row` a row, each model
    from a new row, named on the left, in `width` px; the focus token's row and column outlined. A long sentence
    (is_long) is pooled to a cell every 2 px of a tile, and the title says so. width: default a projector's
    column, NARROW_WIDTH with the sidebar open, PROJECTOR_COLUMN in projector mode (where it is folded).

    Each model is one heatmap: its heads tiled with blank (NaN) cells between them, as heads_grid does. One
    subplot per head (11 for the bundled models) took the browser 0.66 s of a 1.41 s page change at 45 words."""
    width = width or (PROJECTOR_COLUMN if projector_mode() else NARROW_WIDTH)
    names = list(patterns)
    tile = (width - 60 - 95 - 12 * (per_row - 1)) // per_row   # names on the left, the colour bar and its title right
    longest = max(max(pattern.shape[1:]) for pattern in patterns.values())
    factor = pool_factor(longest, tile // 2) if is_long(longest) else 1
    if factor > 1:
        title = f"{title}<br><sup>{resolution_note(factor, factor)}</sup>"
    cell = tile / -(-longest // factor)                        # px a cell: every model's tiles at one scale
    label_px = font(12) + 8                                    # a tile's "head 3" over it
    column_gap, row_gap = max(1, round(12 / cell)), max(1, int(-(-label_px // cell)))    # in cells
    low, high = weight_range(np.concatenate([p.ravel() for p in patterns.values()]), scale)
    box = dict(type="rect", line=dict(color="crimson", width=1.5))
    blocks, shapes, notes = [], [], []          # per model: (trace, rows in cells, columns in cells)
    for index, name in enumerate(names):
        axes = ("x", "y") if index == 0 else (f"x{index + 1}", f"y{index + 1}")
        pattern = patterns[name] if factor == 1 else pooled_attention(patterns[name], factor, factor)
        heads, n_queries, n_keys = pattern.shape
        tile_rows, tile_columns = -(-heads // per_row), min(heads, per_row)
        grid = np.full((tile_rows * (n_queries + row_gap) - row_gap, tile_columns * (n_keys + column_gap) - column_gap),
                       np.nan, dtype=np.float32)
        head_of = np.full(grid.shape, -1, dtype=np.int16)        # each cell's head, for the hover
        for head in range(heads):
            top, left = (head // per_row) * (n_queries + row_gap), (head % per_row) * (n_keys + column_gap)
            grid[top:top + n_queries, left:left + n_keys] = pattern[head]
            head_of[top:top + n_queries, left:left + n_keys] = head
            notes.append(dict(text=f"head {head}", x=left + (n_keys - 1) / 2, y=top - 0.5, xref=axes[0], yref=axes[1],
                              showarrow=False, yanchor="bottom", font=dict(size=font(12))))
            outline = dict(box, xref=axes[0], yref=axes[1])
            if focus_row is not None and focus_row < len(query_tokens[name]):
                row = top + focus_row // factor
                shapes.append(dict(outline, x0=left - 0.5, x1=left + n_keys - 0.5, y0=row - 0.5, y1=row + 0.5))
            if focus_column is not None and focus_column < len(key_tokens[name]):
                column = left + focus_column // factor
                shapes.append(dict(outline, x0=column - 0.5, x1=column + 0.5, y0=top - 0.5, y1=top + n_queries - 0.5))
        # Category labels are unique per axis: a tile's copy of a token gets its own count of zero-width spaces (it
        # reads the same on hover), a gap its own run of spaces.
        queries = tiled_copies(block_labels(query_tokens[name], factor), tile_rows, row_gap)
        keys = tiled_copies(block_labels(key_tokens[name], factor), tile_columns, column_gap)
        trace = go.Heatmap(z=grid, x=keys, y=queries, customdata=head_of, coloraxis="coloraxis", xaxis=axes[0],
                           yaxis=axes[1], hoverongaps=False,
                           hovertemplate=hover_text(f"{name} · head %{{customdata}}<br>"
                                                    + (POOLED_HOVER if factor > 1 else ATTENTION_HOVER), scale))
        blocks.append((trace, grid.shape[0], grid.shape[1]))
    title = wrapped_title(title, width - 20)
    plot_width = width - 20                              # the margins' 10 px a side; in it, 50 px for the names
    plot_height = sum(round(rows * cell) for _, rows, _ in blocks) + label_px * (len(blocks) - 1)
    top = title_height(title) + label_px
    height = plot_height + top + 10
    figure = go.Figure([trace for trace, _, _ in blocks])
    upper = 1.0
    for index, (name, (_, rows, columns)) in enumerate(zip(names, blocks)):
        suffix = "" if index == 0 else str(index + 1)
        share = round(rows * cell) / plot_height
        axis = dict(type="category", showticklabels=False, showgrid=False, ticks="", zeroline=False)
        figure.layout[f"xaxis{suffix}"] = dict(axis, domain=[50 / plot_width, min(1.0, (50 + columns * cell) / plot_width)],
                                               anchor=f"y{suffix}")
        figure.layout[f"yaxis{suffix}"] = dict(axis, domain=[max(0.0, upper - share), upper], anchor=f"x{suffix}",
                                               autorange="reversed",
                                               title=dict(text=name, font=dict(size=font(12))))
        upper -= share + label_px / plot_height
    figure.update_layout(shapes=shapes, annotations=notes)
    figure.update_layout(coloraxis=dict(colorscale="Blues", cmin=low, cmax=high, colorbar=dict(
                             title=dict(text=scale_note(np.array([low, high]), scale), font=dict(size=font(12))),
                             thickness=10, len=min(1.0, 300 / height), y=1, yanchor="top", x=1, xanchor="right",
                             tickfont=dict(size=font(12)))),
                         title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=12)),
                         width=width, height=height, margin=dict(l=10, r=10, t=top, b=10),
                         plot_bgcolor="white")
    return figure


def tiled_copies(labels: list[str], copies: int, gap: int) -> list[str]:
    """Axis categories for `copies` tiles of the same labels with `gap` blank categories between them: each copy's
    labels made unique by zero-width spaces (shown the same), each gap a run of spaces."""
    tiled = []
    for copy in range(copies):
        if copy:
            tiled += [" " * ((copy - 1) * gap + g) for g in range(1, gap + 1)]
        tiled += [label + "\u200b" * copy for label in labels]
    return tiled
