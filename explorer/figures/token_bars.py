"""A value or two per token as bars, described once (TokenBars) and drawn by one function a backend: html_bars, upright
bars in HTML (st.html) for the page, and plotly_bars (explorer/figures/decoding.py) for the ⬇ HTML and the notebook.
The Decoding page's every step (the chosen token's probability and the entropy), where one step looked (a weight per
key), the Prune page's probabilities under each model. Each token is a column: its bars over
its label, read upwards; the columns wrap onto a new line where the page's column ends, so every label stays at
its size at 45 words and in a projector's 564 px column (a plotly chart thinned its labels there). Each column's
hover names its token and values; a faint line marks the middle of each bar's range.

Why not plotly: a page whose first view has a plotly figure makes the browser load and run plotly.js (3.5 MB)
first (benchmarks/browser.py --cold-links). The figure's ⬇ HTML is the plotly chart (explorer/figures/decoding.py).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from explorer.figures.common import cell_size, font, label_font
from explorer.figures.html_cells import AS_WIDE_AS_THE_TABLE, figure_box, numbered, upright

BLUE, ORANGE, GREEN = "#1f77b4", "#ff7f0e", "#2ca02c"      # plotly's first colours, as the ⬇ HTML's chart draws them


def probability_text(p: float) -> str:
    """A probability (or weight) in three decimals from 0.01 on, below in two significant digits (0.0058,
    0.00029): never 0.000 for one that is not 0; "none" for a value that is not finite."""
    if not math.isfinite(p):
        return "none"
    return f"{p:.3f}" if p >= 0.01 or p == 0 else f"{p:.2g}"


@dataclass(frozen=True)
class Bars:
    """One row of bars: its name ("p(chosen)"), a value per token, the value a full bar stands for, its height in
    px, its colour, and how a value is written on hover (by default as a probability: never 0.000 for 0.0004)."""
    name: str
    values: Sequence[float]
    top: float
    height: int
    colour: str = BLUE
    written: Callable[[float], str] = probability_text
    tick: float | None = None       # the plotly axis's step between ticks (entropy's whole nats); None: plotly's


def axis(bars: Bars) -> str:
    """The row's scale left of its first column: the top value, the name, 0."""
    return (f'<div style="height: {font(bars.height)}px; display: flex; flex-direction: column; '
            f'justify-content: space-between; align-items: flex-end; padding-right: 4px; color: #444; '
            f'font-size: {font(11)}px; line-height: 1.1; text-align: right">'
            f'<span>{bars.top:g}</span><span style="color: {bars.colour}; font-weight: 600">'
            f'{html.escape(bars.name)}</span><span>0</span></div>')


def bar(bars: Bars, value: float, width: int) -> str:
    share = 0.0 if bars.top <= 0 or not math.isfinite(value) else min(max(value / bars.top, 0.0), 1.0)
    return (f'<div class="bar" data-bar="{html.escape(bars.name)}" data-value="{value:.6g}" style="position: '
            f'relative; width: {width}px; height: {font(bars.height)}px; border-bottom: 1px solid #999; '
            f'background: linear-gradient(to bottom, transparent calc(50% - 0.5px), #eee calc(50% - 0.5px), '
            f'#eee calc(50% + 0.5px), transparent calc(50% + 0.5px))"><div style="position: absolute; bottom: 0; '
            f'left: 1px; right: 1px; height: {100 * share:.2f}%; background: {bars.colour}"></div></div>')


@dataclass(frozen=True)
class TokenBars:
    """Bars for each of `labels` (raw tokens), a column each; `rows` of bars one over the other. subtitle: a line
    under the title on the page; details: lines under the title in the plotly chart (each short)."""
    labels: list[str]
    rows: list[Bars]
    title: str
    subtitle: str = ""
    name: str = "token-bars"
    details: tuple[str, ...] = ()


def html_bars(described: TokenBars) -> str:
    """The bars as an HTML figure (every text escaped here); a line under them says where the interactive chart is."""
    labels, rows, title, subtitle, name = (numbered(described.labels), described.rows, described.title,
                                           described.subtitle, described.name)
    count = len(labels)
    width, size = cell_size(count), label_font(count)
    gap = font(6)
    scales = ('<div style="display: flex; flex-direction: column; gap: ' + f'{gap}px">'
              + "".join(axis(bars) for bars in rows) + "</div>")
    columns = []
    for index, label in enumerate(labels):
        hover = "\n".join([label] + [f"{bars.name} {bars.written(bars.values[index])}" for bars in rows])
        columns.append(
            f'<div class="token-column" data-label="{html.escape(label)}" title="{html.escape(hover)}" '
            f'style="display: flex; flex-direction: column; gap: {gap}px; width: {width}px">'
            + "".join(bar(bars, float(bars.values[index]), width) for bars in rows)
            + upright(label, size, "bar-label") + "</div>")
    # The scales stand before the first line of columns only; each row keeps its colour on every line, the key
    # names them, and each column's hover names its values.
    body = (f'<div style="display: flex; flex-wrap: wrap; row-gap: {font(10)}px; align-items: flex-start">'
            f'{scales}{"".join(columns)}</div>')
    note = (f'<div style="{AS_WIDE_AS_THE_TABLE}; font-size: {font(12)}px; color: #666; margin-top: 4px">'
            '⬇ HTML: the plotly chart, which zooms</div>')
    return figure_box(title, body, note, subtitle, name, box="display: block")
