"""Heads' whole patterns as small images in an HTML table (st.html): the Attention page's every head of a kind,
Compare's every head of every model, and the whole pattern beside a long sentence's focus window. A tile is a PNG
of the head's [query, key] weights, a cell per pixel, drawn large with the browser's pixelated scaling; the table
names each tile's head, outlines a flagged one (an attention sink, a pruned head) and the focus token's row and
column, and a key gives the colours' range.

Why images: each plotly heatmap costs the browser ~0.2 s of a page change. In an interleaved A/B at 45 words
(benchmarks/page_ab.py), the Attention page took 1.11 s with its plotly every-head grid and 0.87 s without it; 24
tiles in a table cost a few ms. A tile has no token labels (at 45 tokens a cell is 2–5 px): its hover names the
head, the head's own heatmap above labels every token, and the figure's ⬇ HTML is the plotly figure, whose hover
names each cell's tokens.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image
from plotly.colors import hex_to_rgb, sample_colorscale, unlabel_rgb

from explorer.figures.common import font, text_width, weight_range
from explorer.figures.focus import OVERVIEW_SIDE, numbered_positions
from explorer.figures.html_cells import NO_VALUE, figure_box, named_scale, scale_positions, weight_key
from explorer.figures.pooling import budget_factor, pool_factor, pooled_attention, resolution_note

SCALE = "Blues"             # the heatmaps' colour scale
LEVELS = 256                # colours a tile's scale is sampled at (a step of Blues is 1–2 units of a channel)
FLAG = "darkorange"         # a flagged head's outline, as heads_grid's
FOCUS = "crimson"           # the focus token's row and column, as models_overview's
MAX_TILE = 260              # px a side: one or two heads are not stretched over a wide page
MAX_TILE_CELLS = 64         # cells a side of a tile, past which a long sentence is pooled, as the plotly grid
                            # pooled: a tile is 55–105 px at 8 heads a row, and a pixelated image drawn smaller
                            # than its cells drops some of them


@dataclass(frozen=True)
class Tile:
    """One head's tile: its pattern [query, key], the name over it ("head 3"), its hover, and a flag's note
    ("sink 0.83", "pruned"; "" for none): a flagged tile is outlined and its note written over it."""
    pattern: np.ndarray
    name: str
    hover: str
    note: str = ""


@lru_cache(maxsize=8)
def colour_levels(scale: str) -> np.ndarray:
    """The scale sampled at LEVELS evenly spaced points: [LEVELS, 3] RGB bytes."""
    colours = sample_colorscale(named_scale(scale), list(np.linspace(0.0, 1.0, LEVELS)))
    return np.rint([unlabel_rgb(colour) for colour in colours]).astype(np.uint8)


def pattern_png(matrix: np.ndarray, low: float, high: float, scale: str = SCALE) -> str:
    """A [query, key] matrix as a PNG data URI, one pixel a cell, coloured on `scale` over [low, high]; a cell
    that is not finite (a pruned head's blanked weights) gets NO_VALUE."""
    values = np.asarray(matrix, dtype=float)
    finite = np.isfinite(values)
    pixels = colour_levels(scale)[np.rint(scale_positions(values, low, high) * (LEVELS - 1)).astype(int)]
    pixels[~finite] = hex_to_rgb(NO_VALUE)
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels), "RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def outline(left: float, top: float, width: float, height: float, colour: str) -> str:
    """A box over a tile (the focus token's row or column), in % of the tile's width and height."""
    return (f'<div class="focus" style="position: absolute; left: {left:.3f}%; top: {top:.3f}%; width: {width:.3f}%; '
            f'height: {height:.3f}%; border: 1.5px solid {colour}; box-sizing: border-box"></div>')


def tile_cell(tile: Tile, shown: np.ndarray, source: str, factor: int, focus_row: int | None,
              focus_column: int | None, short_notes: bool, widest: int) -> str:
    """A tile's table cell: its name (and note) over its image, the focus token's row and column outlined. shown:
    the pattern as drawn (pooled); widest: the most columns any tile has, whose image fills its table column, so
    every tile's cells are the same size (a model that splits the sentence into fewer pieces gets a smaller tile)
    and square (the image keeps its proportions)."""
    rows, columns = shown.shape
    boxes = ""
    if focus_row is not None and focus_row < tile.pattern.shape[0]:
        boxes += outline(0, 100 * (focus_row // factor) / rows, 100, 100 / rows, FOCUS)
    if focus_column is not None and focus_column < tile.pattern.shape[1]:
        boxes += outline(100 * (focus_column // factor) / columns, 0, 100 / columns, 100, FOCUS)
    note = ""
    if tile.note:
        mark = ("✂" if tile.note == "pruned" else "S") if short_notes else tile.note
        note = f' <span style="background: rgba(255, 200, 120, 0.85); padding: 0 2px">{html.escape(mark)}</span>'
    border = FLAG if tile.note else "transparent"
    hover = tile.hover + (f" ({tile.note})" if tile.note else "")
    return (f'<td class="tile" data-head="{html.escape(tile.name)}" title="{html.escape(hover)}" '
            f'style="padding: 0; vertical-align: top">'
            f'<div style="font-size: {font(12)}px; text-align: center; white-space: nowrap; overflow: hidden; '
            f'text-overflow: ellipsis">{html.escape(tile.name)}{note}</div>'
            f'<div style="position: relative; width: {100 * columns / widest:.3f}%; border: 2px solid {border}">'
            f'<img src="{source}" alt="{html.escape(tile.name)}" style="display: block; width: 100%; height: auto; '
            f'image-rendering: pixelated">{boxes}</div></td>')


def thumbnail_grid(rows: list[tuple[str, list[Tile]]], title: str, subtitle: str, scale: str,
                   focus_row: int | None = None, focus_column: int | None = None, name: str = "thumbnails",
                   width: int | None = None) -> str:
    """A figure of tiles: rows [(the row's name, "layer 0" or a model's; its tiles)]. The table is as wide as the
    page's column (each tile MAX_TILE px at most), or `width` px, its columns of equal width, every tile's cells of
    one size, so a projector's narrow column gets smaller tiles, never a table cut off. A sentence longer than
    MAX_TILE_CELLS tokens is pooled (each cell a block's total weight, averaged over its queries) and the subtitle
    says so. scale: the sidebar's colour scale (common.ABSOLUTE, PER_FIGURE or NORMS), over every tile at once.
    Every text is escaped here."""
    patterns = [tile.pattern for _, tiles in rows for tile in tiles]
    factor = pool_factor(max(max(pattern.shape) for pattern in patterns), MAX_TILE_CELLS)
    if factor > 1:
        subtitle = f"{subtitle}; {resolution_note(factor, factor, hover=False)}"
    shown = [pattern if factor == 1 else pooled_attention(pattern, factor, factor) for pattern in patterns]
    low, high = weight_range(np.concatenate([np.ravel(pattern) for pattern in shown]), scale)
    drawn = iter(shown)
    columns = max(len(tiles) for _, tiles in rows)
    short_notes = columns > 8           # too narrow for "sink 0.83": a mark, the note in the hover
    row_name = f'style="font-weight: normal; font-size: {font(12)}px; text-align: right; padding: 0 4px"'
    widest = max(pattern.shape[1] for pattern in shown)

    def cell(tile: Tile) -> str:
        pattern = next(drawn)
        return tile_cell(tile, pattern, pattern_png(pattern, low, high), factor, focus_row, focus_column, short_notes,
                         widest)

    table_rows = [f"<tr><th {row_name}>{html.escape(label)}</th>" + "".join(cell(tile) for tile in tiles)
                  + "".join("<td></td>" for _ in range(columns - len(tiles))) + "</tr>" for label, tiles in rows]
    label_px = max(text_width(label, font(12)) for label, _ in rows) + 8
    table = (f'<table style="table-layout: fixed; width: 100%; border-collapse: separate; border-spacing: 4px; '
             f'margin: 0 0 {font(6)}px 0"><colgroup><col style="width: {label_px}px">'
             + "<col>" * columns + "</colgroup>" + "".join(table_rows) + "</table>")
    box = (f"display: block; width: {width}px; max-width: 100%" if width else
           f"display: block; max-width: {label_px + columns * (MAX_TILE + 4) + 8}px")
    return figure_box(title, table, weight_key(scale, low, high), subtitle, name, box=box)


def whole_pattern(pattern: np.ndarray, query_count: int, key_count: int, rows: range, columns: range, scale: str,
                  side: int = OVERVIEW_SIDE) -> str:
    """The whole pattern [query, key] beside a focus window, as one tile `side` px on its longer side: its axes
    numbered every few positions (a token's name is in the window beside it, and on hover in the ⬇ HTML), the
    window (`rows` × `columns`) outlined. Pooled past `side` tokens (or the figures' cells budget), and then the
    subtitle says so. query_count, key_count: the tokens a side (the pattern's shape, unpooled)."""
    # Pooled to at most a cell a pixel (a pixelated image drawn smaller than its cells drops some of them), and
    # within the figures' cells budget, as overview_heatmap is.
    factor = max(budget_factor(*np.shape(pattern)), pool_factor(max(np.shape(pattern)), side))
    shown = pattern if factor == 1 else pooled_attention(pattern, factor, factor)
    low, high = weight_range(shown, scale)      # of what is drawn: a pooled block can outweigh any one cell
    n_rows, n_columns = shown.shape
    cell = side / max(n_rows, n_columns)
    size = font(12)
    numbers = []
    for axis, count, cells in (("key", key_count, n_columns), ("query", query_count, n_rows)):
        room = text_width(str(count), size) + 12 if axis == "key" else size + 6
        for position in numbered_positions(count, factor, cell * cells, room):
            middle = (position // factor + 0.5) * cell
            place = (f"left: {middle:.1f}px; top: -2px; transform: translate(-50%, -100%)" if axis == "key" else
                     f"top: {middle:.1f}px; left: -4px; transform: translate(-100%, -50%)")
            numbers.append(f'<span class="{axis}-number" style="position: absolute; {place}; font-size: {size}px; '
                           f'line-height: 1; color: #444">{position}</span>')
    window = outline(100 * (columns.start // factor) / n_columns, 100 * (rows.start // factor) / n_rows,
                     100 * (-(-columns.stop // factor) - columns.start // factor) / n_columns,
                     100 * (-(-rows.stop // factor) - rows.start // factor) / n_rows, FOCUS)
    room = text_width(str(query_count), size) + 8                # the query numbers left of the image
    image = (f'<div style="position: relative; margin: {size + 6}px 0 0 {room}px; width: {cell * n_columns:.1f}px; '
             f'height: {cell * n_rows:.1f}px"><img src="{pattern_png(shown, low, high)}" alt="the whole pattern" '
             f'style="display: block; width: 100%; height: 100%; image-rendering: pixelated">{window}'
             + "".join(numbers) + "</div>")
    subtitle = "rows: query positions, columns: key positions; the window outlined"
    if factor > 1:
        subtitle = f"{subtitle}; {resolution_note(factor, factor, hover=False).split(':')[0]}"
    return figure_box(f"The whole pattern: {query_count} × {key_count}", image, weight_key(scale, low, high),
                      subtitle, "whole-pattern")
