"""The HTML backend of a Matrix of weights (explorer/figures/matrix.py): one head's [query, key] weights with every
token labelled, as an HTML table (st.html): the Attention page's heatmap of a short sentence whole, or of a long
one's focus window (explorer/figures/focus.py), and the same on the Heads page's one head. Queries are rows,
labelled on the left; keys are columns, labelled upright along the top; each cell's hover names its query, its key
and its weight, and in projector mode each cell prints its weight (a class cannot hover).

Why a table: a page whose first view has a plotly figure makes the browser load and run plotly.js (3.5 MB) before
it draws it. In the same run of benchmarks/browser.py --cold-links, a cold deep link to the Attention page at 45
words took 4.10 s with its plotly heatmap and 2.24 s with a table in its place. The figure's ⬇ HTML is the same Matrix
drawn by plotly_heatmap (explorer/figures/matrix.py), for zoom and plotly's camera.
"""

from __future__ import annotations

import html

import numpy as np

from explorer.figures.common import (
    NARROW_WIDTH,
    PROJECTOR_COLUMN,
    SMALLEST_FONT,
    cell_size,
    dense_cell,
    font,
    label_font,
    printed_cell,
    projector_mode,
    text_width,
    weight_range,
)
from explorer.figures.focus import window_title
from explorer.figures.html_cells import (
    coloured_cell,
    figure_box,
    measure_name,
    numbered,
    scale_colours,
    table_html,
    upright,
    weight_key,
)
from explorer.figures.matrix import Matrix
from explorer.figures.thumbnails import whole_pattern

SCALE = "Blues"         # as the whole pattern beside a window, the tiles and the key (html_cells.weight_key)
LARGEST_CELL = 40       # px: a short sentence's cells grow to fill a projector's column, up to this


def cell_hover(query: str, key: str, value: float, measure: str) -> str:
    shown = f"{value:.3f}" if np.isfinite(value) else "none (a pruned head)"
    return f"query {query}\nkey {key}\n{measure} {shown}"


def html_heatmap(matrix: Matrix) -> str:
    """The matrix of weights as a table figure: all of it, or its focus window (coloured on the whole matrix's range,
    like the overview beside it); its overview() as one tile, the window outlined (thumbnails.whole_pattern). A cell
    is a token of the sizing rule (cell_size) for a matrix drawn whole, the densest that labels every token
    (dense_cell) for a window, and in projector mode one that prints its weight (printed_cell); a short sentence's
    cells grow to fill a projector's column (NARROW_WIDTH, or PROJECTOR_COLUMN in projector mode, where the sidebar
    is folded), LARGEST_CELL px at most. Every text is escaped here."""
    pattern, query_tokens, key_tokens, scale = matrix.values, matrix.rows, matrix.columns, matrix.scale
    if matrix.overview_of_window:
        return whole_pattern(pattern, len(query_tokens), len(key_tokens), *matrix.window, scale)
    rows, columns = matrix.window or (None, None)
    subtitle = "" if matrix.window is None else " · ".join(window_title(query_tokens, key_tokens, rows, columns,
                                                                        matrix.units))
    whole = rows is None
    rows = range(pattern.shape[0]) if rows is None else rows
    columns = range(pattern.shape[1]) if columns is None else columns
    low, high = weight_range(pattern, scale)
    shown = np.asarray(pattern, dtype=float)[rows.start:rows.stop, columns.start:columns.stop]
    printed = projector_mode()
    longest = max(len(rows), len(columns), 1)
    size = label_font(longest) if whole else font(SMALLEST_FONT)
    queries, keys = numbered(query_tokens, rows), numbered(key_tokens, columns)
    side = printed_cell() if printed else cell_size(longest) if whole else dense_cell()
    if whole and keys:
        labels = max((text_width(query, size) for query in queries), default=0)
        room = (PROJECTOR_COLUMN if printed else NARROW_WIDTH) - labels - 12
        side = max(side, min(font(LARGEST_CELL), room // len(keys) - 1))
    measure = measure_name(scale)
    colours = iter(scale_colours(SCALE, shown, low, high))
    label_style = f"font-weight: normal; font-size: {size}px; white-space: nowrap"
    corner = (f'<th style="{label_style}; padding: 0 4px 0 0; vertical-align: bottom; color: #666">'
              '<div style="text-align: right">key →</div><div style="text-align: left">query ↓</div></th>')
    header = ("<tr>" + corner + "".join(f'<th style="{label_style}; vertical-align: bottom; padding: 0 0 3px 0">'
                                        f'{upright(key, size, "key-label")}</th>' for key in keys) + "</tr>")
    body = []
    for row, (position, query) in enumerate(zip(rows, queries)):
        cells = "".join(
            coloured_cell(f"{value:.2f}" if printed and np.isfinite(value) else "",
                          cell_hover(query, key, value, measure), next(colours), side, side, font(SMALLEST_FONT),
                          query=position, key=column, weight=f"{value:.6g}")
            for column, key, value in zip(columns, keys, shown[row]))
        body.append(f'<tr><th class="query-label" style="{label_style}; padding: 0 4px 0 0; text-align: right">'
                    f'{html.escape(query)}</th>{cells}</tr>')
    key_note = "this figure" if whole else "whole pattern"
    return figure_box(matrix.title, table_html([header, *body], "1px"), weight_key(scale, low, high, key_note), subtitle,
                      "token-heatmap")
