"""Colours for figures drawn as HTML tables (st.html) rather than plotly: a cell's background from a plotly colour
scale, a text colour that reads on it, and the colour key under a table.

Why tables: each plotly figure costs the browser ~0.3 s of a page change (a 45-word sentence on this 2-core
machine); a small table of coloured cells with text costs a few ms and its words stay selectable text. Only a small
one: Streamlit sanitises st.html's markup node by node, and a 2,401-cell table (a 49 × 49 pattern) cost as much as
the plotly figure it replaced.
"""

from __future__ import annotations

import html
from functools import lru_cache

import numpy as np
from plotly.colors import get_colorscale, hex_to_rgb, sample_colorscale, unlabel_rgb

from explorer.figures.common import ABSOLUTE, NORMS, SMALLEST_FONT, font

NO_VALUE = "#f4f4f4"        # a cell without a value (no head there, a shorter model's row)


def scale_positions(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Where each value lies on a colour scale over [low, high], 0–1 (clipped; the middle when low == high; a value
    that is not finite at 0, for the caller to colour NO_VALUE)."""
    span = high - low
    if span <= 0:
        return np.full(np.shape(values), 0.5)
    return np.clip((np.nan_to_num(values, nan=low, posinf=low, neginf=low) - low) / span, 0.0, 1.0)


def scale_colours(scale, values, low: float, high: float, reverse: bool = False) -> list[str]:
    """Each value's colour on `scale` (a plotly colour scale: a name or [[position, colour], …]) over [low, high],
    as "rgb(…)"; a value that is not finite gets NO_VALUE. One call for a whole table: sampling cell by cell cost
    0.1 ms each."""
    values = np.asarray(values, dtype=float).ravel()
    finite = np.isfinite(values)
    positions = scale_positions(values, low, high)
    if reverse:
        positions = 1 - positions
    if isinstance(scale, str):
        scale = named_scale(scale)
    sampled = iter(sample_colorscale(scale, [float(p) for p in positions[finite]]) if finite.any() else [])
    return [next(sampled) if shown else NO_VALUE for shown in finite]


@lru_cache(maxsize=16)
def named_scale(name: str) -> list:
    """A named plotly colour scale as its [[position, colour], …]: looked up once (plotly searches its modules of
    scales on every call, 8 ms, which was most of building Compare's 539-cell table)."""
    return get_colorscale(name)


@lru_cache(maxsize=4096)
def text_colour(background: str) -> str:
    """Black or white, whichever reads on `background` ("rgb(…)" or "#rrggbb")."""
    red, green, blue = unlabel_rgb(background) if background.startswith("rgb") else hex_to_rgb(background)
    return "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 140 else "black"


def cell_style(background: str) -> str:
    return f"background: {background}; color: {text_colour(background)}"


# A title or key as wide as the table under or over it, never wider: with no width of its own (0) it does not
# widen the figure, and min-width 100% gives it the table's. A long subtitle had made Compare's strips 470 px wide
# for a 300 px table, and pushed the overview beside them onto a row of its own at 1400 px.
AS_WIDE_AS_THE_TABLE = "width: 0; min-width: 100%"


def figure_box(title: str, table: str, key: str = "", subtitle: str = "", name: str = "", attributes: str = "",
               box: str = "display: inline-block") -> str:
    """A table figure: its title (and a grey subtitle) over the table and the key under it, in a box as wide as the
    table. Titles are escaped here; `table` and `key` are HTML already. name: the box's class, for tests and CSS.
    box: the box's own style, "display: block; max-width: …" for a table as wide as the column."""
    top = (f'<div style="{AS_WIDE_AS_THE_TABLE}; font-size: {font(15)}px; font-weight: 600">{html.escape(title)}</div>'
           + (f'<div style="{AS_WIDE_AS_THE_TABLE}; font-size: {font(12)}px; color: #666">{html.escape(subtitle)}</div>'
              if subtitle else ""))
    return (f'<div class="{name}" {attributes} style="{box}; vertical-align: top; '
            f'margin-bottom: {font(8)}px">{top}<div style="margin-top: 4px">{table}</div>{key}</div>')


def colour_key(title: str, low: str, high: str, colours: list[str]) -> str:
    """A key under a table: its title, the low end's text, a bar of `colours` from low to high, the high end's.
    data-legend carries the title for tests and scripts."""
    escaped = html.escape(title)
    return (f'<div class="legend" data-legend="{escaped}" style="{AS_WIDE_AS_THE_TABLE}; font-size: '
            f'{font(SMALLEST_FONT + 1)}px; display: flex; flex-wrap: wrap; align-items: center; gap: 6px">'
            f'<span>{escaped}:</span><span>{html.escape(low)}</span>'
            f'<span style="display: inline-block; width: 140px; height: 12px; background: linear-gradient(to right, '
            f'{", ".join(colours)})"></span><span>{html.escape(high)}</span></div>')


def measure_name(scale: str) -> str:
    """What a figure's cells hold: attention weights, or (scale NORMS) the norms ‖α·f(x)‖."""
    return "‖α·f(x)‖" if scale == NORMS else "weight"


def numbered(tokens: list[str], shown=None) -> list[str]:
    """Tokens as a figure's labels, "position token", raw (escaped where they are written): all, or those at
    the positions `shown`."""
    return [f"{position} {tokens[position]}" for position in (range(len(tokens)) if shown is None else shown)]


def upright(label: str, size: int, name: str) -> str:
    """A label read upwards, at `size` px (escaped here); name: its class ("key-label", "bar-label" …)."""
    return (f'<div class="{name}" style="writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; '
            f'font-size: {size}px; line-height: 1.1; margin: 0 auto">{html.escape(label)}</div>')


def weight_key(scale: str, low: float, high: float, of: str = "this figure") -> str:
    """The key of a figure coloured on Blues over [low, high]: weights on 0–1 (ABSOLUTE), or weights or norms from
    0 to the largest of what `of` names (a focus window is coloured on its whole pattern's range)."""
    measure = measure_name(scale)
    title = f"{measure} (0–1)" if scale == ABSOLUTE else f"{measure} (0–{high:.2g}, {of})"
    return colour_key(title, f"{low:.2g}", f"{high:.2g}", scale_colours("Blues", np.linspace(low, high, 9), low, high))


def coloured_cell(text: str, hover: str, background: str, width: int, height: int, size: int, **data) -> str:
    """A table figure's cell: its text (escaped here, lines split by "\n") centred on its background, in a text
    colour that reads on it; its hover (escaped here); data: data-* attributes naming it (layer, head, row …), in
    the order given."""
    named = "".join(f' data-{name}="{html.escape(str(value))}"' for name, value in data.items())
    return (f'<td{named} title="{html.escape(hover)}" style="{cell_style(background)}; width: {width}px; '
            f'min-width: {width}px; height: {height}px; padding: 0; border: none; text-align: center; '
            f'font-size: {size}px; line-height: 1.25; white-space: nowrap">'
            f'{html.escape(text).replace(chr(10), "<br>")}</td>')


def table_html(rows: list[str], spacing: str = "2px") -> str:
    """Rows (each "<tr>…</tr>") as a table of cells `spacing` apart ("1px 0": columns 1 px apart, rows touching)."""
    return (f'<table style="border-collapse: separate; border-spacing: {spacing}; width: auto; '
            f'margin: 0 0 {font(6)}px 0">' + "".join(rows) + "</table>")


def standalone_page(body: str, title: str) -> str:
    """A table figure as a page of its own, for its download: opens offline in any browser."""
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
            f'<body style="font-family: sans-serif">{body}</body></html>')
