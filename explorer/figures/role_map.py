"""The Heads page's role maps: one attention kind's heads as a layers × heads grid, each cell coloured by the head's
importance, role (Voita et al. 2019) or confidence, one short value written in, everything on hover.

An HTML table (st.html), not a plotly figure: three plotly maps took the browser 0.37 s of each change to the Heads
page (0.82 s → 0.45 s without them, 45 words, an interleaved A/B); cells of text need no plot. role_cells works the
numbers out, role_map_html draws them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.analyses.corpus.results import HeadRoles
from explorer.figures.common import SMALLEST_FONT, font, label_font, text_width
from explorer.figures.html_cells import (
    AS_WIDE_AS_THE_TABLE,
    colour_key,
    coloured_cell,
    figure_box,
    scale_colours,
    table_html,
)

ROLE_COLOURS = [("none", "#e8e8e8"), ("positional", "#4c78a8"), ("syntactic", "#54a24b"), ("rare-token", "#e45756"),
                ("several", "#b279a2")]
# What a cell of the map says about its head's role: one short word, or the initials of its several roles.
ROLE_SHORT = {"positional": "pos", "syntactic": "syn", "rare-token": "rare"}
# What can colour the map: the measure of importance chosen on the page, the role, or the confidence.
COLOUR_BY = ("importance", "role", "confidence")
# Past this many heads a cell is too narrow for a number at a readable size: the cells keep colour and hover only.
MOST_HEADS_WITH_TEXT = 16
# Importance measures where a rise means the head matters (masking it hurts); for the BLEU change a fall does.
RISE_HURTS = {"gradient_importance", "gradient_importance_normalised", "loss_change", "perplexity_change"}
# Px: the narrowest column a map stands in (a projector's: 1024 px window, sidebar open, 564 px measured), and what
# of it is not cells (the layer labels and the table's spacing). Two 8-head maps stand side by side at 1400 px.
COLUMN = 560
LABELS = 60
SMALLEST_CELL = 26      # px across: a cell without text still a square a finger can hover
CELL_PADDING = 8        # px of a cell around its text
ROW_HEIGHT = 28         # px of a layer's row


def role_index(roles: list[str]) -> int:
    if not roles:
        return 0
    if len(roles) > 1:
        return 4
    return [name for name, _ in ROLE_COLOURS].index(roles[0])


def role_short(roles: list[str]) -> str:
    """'pos', 'syn', 'rare'; several roles by their initials, 'P+R'; none: ''."""
    if len(roles) == 1:
        return ROLE_SHORT.get(roles[0], roles[0][:4])
    return "+".join(role[0].upper() for role in roles)


def decimals(values) -> int:
    """Decimals that give the largest of `values` two significant digits, so raw gradient scores (~0.0004) never
    read 0.000; one map's cells all alike (0.020 beside 0.021), a head much below the largest reading 0.00."""
    largest = max((abs(v) for v in values if v is not None and np.isfinite(v)), default=0.0)
    if largest == 0:
        return 2
    return int(np.clip(1 - np.floor(np.log10(largest)), 0, 8))


def short_number(value: float, places: int | None = None) -> str:
    """A cell's number, at `places` decimals (decimals([value]) when not given)."""
    return f"{value:.{decimals([value]) if places is None else places}f}"


def cell_font(heads: int, longest: int = 0) -> int:
    """The font (px) of the cells' text: a size under the axis labels', never under the smallest a room reads
    (SMALLEST_FONT)."""
    return max(font(SMALLEST_FONT), label_font(heads) - (1 if longest <= 5 else 2))


@dataclass
class RoleCells:
    """What a role map shows: per cell [layers, heads] its value (nan: no head), text and hover; how values become
    colours (a plotly colour scale over [low, high], `reverse` flips it) and the legend's title."""
    values: np.ndarray
    text: np.ndarray
    hover: np.ndarray
    colour_by: str
    legend: str
    scale: str | list
    low: float
    high: float
    reverse: bool = False

    def colours(self, values) -> list[str]:
        """Each value's background, as "rgb(…)"; a cell without a head is light grey."""
        return scale_colours(self.scale, values, self.low, self.high, self.reverse)


def role_scale() -> list:
    """Role colours as a stepped scale over 0 … len(ROLE_COLOURS) − 1: each index its own colour."""
    count = len(ROLE_COLOURS)
    return [[i / (count - 1), shade] for i, (_, shade) in enumerate(ROLE_COLOURS)]


def role_cells(entries: list[HeadRoles], layers: int, heads: int, importance: dict[str, float],
               colour_by: str = "role", measure: str = "importance", measure_key: str = "",
               measure_short: str = "importance") -> RoleCells:
    """Heads of one kind, coloured by `colour_by`: "importance" (the scores in `importance`, named `measure`,
    `measure_short` in the legend; measure_key, its key in head_importance.json, sets the scale's direction),
    "role" or "confidence". Without importance scores the roles colour it."""
    if colour_by == "importance" and not importance:
        colour_by = "role"
    values = np.full((layers, heads), np.nan)
    text = np.full((layers, heads), "", dtype=object)
    hover = np.full((layers, heads), "", dtype=object)
    places = decimals(importance.get(entry.spec) for entry in entries)
    for entry in entries:
        layer, head = entry.layer, entry.head
        share = importance.get(entry.spec)
        if colour_by == "role":
            values[layer, head], text[layer, head] = role_index(entry.roles), role_short(entry.roles)
        elif colour_by == "confidence":
            values[layer, head], text[layer, head] = entry.confidence, f"{entry.confidence:.2f}"
        elif share is not None:
            values[layer, head], text[layer, head] = share, short_number(share, places)
        hover[layer, head] = (f"{entry.spec}\n{', '.join(entry.roles) or 'no role'}\nconfidence {entry.confidence:.2f}"
                              + (f"\n{measure} {share:.3g}" if share is not None else ""))   # raw scores ~0.0004
    if colour_by == "role":
        return RoleCells(values, text, hover, "role", "role", role_scale(), 0, len(ROLE_COLOURS) - 1)
    if colour_by == "confidence":
        return RoleCells(values, text, hover, "confidence", "confidence", "Blues", 0, 1)
    shown = values[np.isfinite(values)]
    largest = float(np.abs(shown).max()) if shown.size else 1.0
    if measure_key.endswith("_change") or (shown.size and shown.min() < 0):
        # A change on masking, either way: pale at no change (the middle), red where masking hurts. Plotly's
        # RdBu runs red → blue, so a rise that hurts reverses it.
        return RoleCells(values, text, hover, "importance", measure_short, "RdBu", -largest, largest,
                         reverse=measure_key in RISE_HURTS)
    return RoleCells(values, text, hover, "importance", measure_short, "YlOrRd", 0, largest)


def cell_layout(cells: RoleCells, column: int = COLUMN) -> tuple[int, int, bool]:
    """(a cell's px across, its text's px, whether values are written in): every value in its cell at a readable
    size when the heads fit `column` px that way, else colour and hover only."""
    layers, heads = cells.values.shape
    size = cell_font(heads, max((len(t) for t in cells.text.flat), default=0))
    needed = max([text_width(t, size) for t in cells.text.flat if t] + [0]) + CELL_PADDING
    width = max(font(SMALLEST_CELL), needed)
    if heads <= MOST_HEADS_WITH_TEXT and LABELS + heads * (width + 2) <= column:
        return width, size, True
    return max(font(SMALLEST_CELL) // 2, min(width, (column - LABELS) // heads - 2)), size, False


def legend_html(cells: RoleCells) -> str:
    """The key under a map: the roles' colours by name, or the scale's gradient from its low end to its high one."""
    if cells.colour_by == "role":
        items = "".join(f'<span style="white-space: nowrap; margin-right: 10px"><span style="display: inline-block; '
                        f'width: 12px; height: 12px; background: {shade}; vertical-align: -1px"></span> {name}</span> '
                        for name, shade in ROLE_COLOURS)
        return (f'<div class="legend" data-legend="role" style="{AS_WIDE_AS_THE_TABLE}; '
                f'font-size: {font(SMALLEST_FONT + 1)}px">{items}</div>')
    places = decimals([cells.low, cells.high])
    return colour_key(cells.legend, short_number(cells.low, places), short_number(cells.high, places),
                      cells.colours(np.linspace(cells.low, cells.high, 9)))


def role_map_html(cells: RoleCells, title: str, column: int = COLUMN) -> str:
    """The map as an HTML table: rows layers, columns heads, a value in each cell where it fits, the head's every
    number in its hover (its title); the legend under it. Every text is escaped."""
    layers, heads = cells.values.shape
    width, size, written = cell_layout(cells, column)
    label = f"font-weight: normal; font-size: {label_font(heads)}px; padding: 0 4px; white-space: nowrap"
    rows = [f'<tr><th style="{label}; text-align: right">layer</th>'
            f'<th colspan="{heads}" style="{label}; text-align: center">head</th></tr>',
            "<tr><th></th>" + "".join(f'<th style="{label}; text-align: center">{head}</th>' for head in range(heads))
            + "</tr>"]
    backgrounds = np.reshape(cells.colours(cells.values), (layers, heads))
    for layer in range(layers):
        row = []
        for head in range(heads):
            row.append(coloured_cell(cells.text[layer, head] if written else "", cells.hover[layer, head],
                                     backgrounds[layer, head], width, font(ROW_HEIGHT), size, layer=layer, head=head))
        rows.append(f'<tr><th style="{label}; text-align: right">{layer}</th>{"".join(row)}</tr>')
    return figure_box(title, table_html(rows), legend_html(cells), name="role-map",
                      attributes=f'data-colour-by="{cells.colour_by}"')
