"""The padding mask of a batch of sentences in HTML (st.html): a column a position, a cell a sentence, each cell
coloured by whether its key may be attended to and holding that sentence's own piece, read upwards (a pad is
"<pad>"). The columns wrap onto a new line where the page's column ends, so every piece is written at 45 words
and in a projector's column (the plotly figure named them on hover only past 12 positions).

Why not plotly: it is the first figure the Internals page draws for a model with an encoder (its Masks tab opens on
the encoder, whose mask is said in words), and a plotly figure on a page's first view makes the browser load
plotly.js before it (benchmarks/browser.py --cold-links). A decoder-only model's first view still draws its
look-ahead mask with plotly. The figure's ⬇ HTML is the plotly one (explorer/figures/internals.py's mask_heatmap).
"""

from __future__ import annotations

import html

import numpy as np

from explorer.figures.common import SMALLEST_FONT, dense_cell, font, text_width
from explorer.figures.html_cells import AS_WIDE_AS_THE_TABLE, figure_box, text_colour, upright

ALLOWED, BLOCKED = "#9ecae1", "#3b3b3b"      # as mask_heatmap's two colours
LONGEST_PIECE = 110                          # px of a cell: a longer piece is cut at its end (its hover has it whole)


def swatch(colour: str, text: str) -> str:
    return (f'<span style="display: inline-flex; align-items: center; gap: 4px"><span style="display: inline-block; '
            f'width: 14px; height: 14px; background: {colour}"></span>{html.escape(text)}</span>')


def padding_mask_html(mask: np.ndarray, names: list[str], pieces: list[list[str]], title: str) -> str:
    """mask [sentences, positions] (True = a real token, False = a pad), each row's `names` and `pieces` (raw:
    escaped here) as a figure of position columns."""
    size = font(SMALLEST_FONT)
    width = max(dense_cell(), text_width(str(mask.shape[1] - 1), size) + 2)     # the positions' numbers side by side
    height = min(font(LONGEST_PIECE), max(text_width(p, size) for row in pieces for p in row)) + 8
    label = f"font-size: {size}px; line-height: 1.1; white-space: nowrap"
    names_block = (f'<div style="display: flex; flex-direction: column; gap: 2px; padding: {size + 4}px 4px 0 0">'
                   + "".join(f'<div class="sentence-name" style="{label}; height: {height}px; display: flex; '
                             f'align-items: center; justify-content: flex-end">{html.escape(name)}</div>'
                             for name in names) + "</div>")
    columns = []
    for position in range(mask.shape[1]):
        cells = []
        for row, name in enumerate(names):
            allowed = bool(mask[row, position])
            colour = ALLOWED if allowed else BLOCKED
            state = "may attend (1)" if allowed else "blocked (0): a pad, hidden from every query"
            hover = f"{name}, position {position}: {pieces[row][position]}\n{state}"
            cells.append(f'<div class="mask-cell" data-row="{row}" data-position="{position}" '
                         f'data-allowed="{int(allowed)}" title="{html.escape(hover)}" style="height: {height}px; '
                         f'background: {colour}; '
                         f'color: {text_colour(colour)}; overflow: hidden; display: flex; justify-content: center; '
                         f'align-items: flex-end">{upright(pieces[row][position], size, "piece")}</div>')
        columns.append(f'<div style="display: flex; flex-direction: column; gap: 2px; width: {width}px">'
                       f'<div class="position" style="{label}; text-align: center; height: {size + 2}px">'
                       f'{position}</div>{"".join(cells)}</div>')
    body = (f'<div style="display: flex; flex-wrap: wrap; gap: {font(10)}px 1px; align-items: flex-start">'
            f'{names_block}{"".join(columns)}</div>')
    key = (f'<div class="legend" style="{AS_WIDE_AS_THE_TABLE}; font-size: {font(12)}px; display: flex; gap: 12px; '
           f'margin-top: 6px">{swatch(ALLOWED, "may attend (1)")}{swatch(BLOCKED, "blocked (0)")}</div>')
    order = " over ".join(names)          # the rows' order, the same on every line the columns wrap onto
    return figure_box(title, body, key, f"a column a position ({order}), each sentence's own piece in its cell",
                      "padding-mask", box="display: block")
