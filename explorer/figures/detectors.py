"""Figures of head detectors and activation patching: layers × heads maps, one panel per detector or kind, the
value printed in each cell (while cells are wide enough) and on hover."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import cell_size, every_label
from explorer.figures.role_map import MOST_HEADS_WITH_TEXT, cell_font
from explorer.models.vocabulary import KIND_TITLES, SHORT_NAMES

PANEL_GAP = 0.04
STACK_LABELS = {"encoder": "enc", "decoder": "dec"}
# Px: the figure's width, the narrowest main column it is read in (a projector's 1024 px window, sidebar open: 564
# px measured in Chromium), the same at every window width: sized for the wide page's 1000 px column instead and
# squeezed into that one, an 8-head panel's values ran into each other ("0.040.000.01"). The panels' share of it
# (less the layer labels and the colour bar), the narrowest cell that holds a value ("0.00", "-0.12") in TEXT_FONT,
# and the parts of a row of panels above its cells.
FIGURE_WIDTH = 560
PANELS_WIDTH = FIGURE_WIDTH - 150
TEXT_FONT = 14                      # px of the values written in the cells
TEXT_CELL = 40                      # px a cell at least, for a value in TEXT_FONT (~30 px) and the gaps around it
HEAD_LABELS, TITLE_LINE, SUBTITLE_LINE, ROW_GAP = 28, 18, 16, 22
FIGURE_TITLE = 44                   # px above the first row of panels: the figure's title
MIN_PLOT = 170                      # px of cells at least, so the colour bar beside them is readable


def cell_text(value: float) -> str:
    """Two decimals, a small negative value read as 0.00 (not −0.00), nothing for a missing one."""
    if not np.isfinite(value):
        return ""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def panel_rows(widths: list[int], room: float = PANELS_WIDTH, cell: float = TEXT_CELL) -> list[list[int]]:
    """The panels (indices) of each row: all in one row while every cell gets `cell` px of `room`, else in as
    few rows as let them (panels kept in order, the same number a row); a panel wider than the room alone."""
    count = len(widths)
    for rows in range(1, count + 1):
        per_row = -(-count // rows)
        groups = [list(range(start, min(count, start + per_row))) for start in range(0, count, per_row)]
        if all(sum(widths[i] for i in group) * cell + (len(group) - 1) * PANEL_GAP * room <= room
               for group in groups):
            return groups
    return [[i] for i in range(count)]


def _panels(values: list[np.ndarray], titles: list[str], hovers: list[np.ndarray], columns: list[list[str]],
            title: str, colour: dict, rows_label: str = "layer", subtitles: list[str] | None = None,
            colours: list[np.ndarray] | None = None) -> go.Figure:
    """Heatmaps side by side (in rows of panels when a row would make cells too narrow for their values), one
    colour axis; values [layers, columns] each, written in the cells; colours: what the colours show, when not
    the values themselves. Every panel has a title, and under it a subtitle when given. Built in one go (domains
    computed here, not by make_subplots and per-axis updates: plotly's checks made that 0.2 s a figure)."""
    colours = values if colours is None else colours
    widest = max(v.shape[1] for v in values)
    widths = [max(1, v.shape[1]) for v in values]
    groups = panel_rows(widths)
    row_columns = max(sum(widths[i] for i in group) for group in groups)
    room = 1 - PANEL_GAP * (max(len(group) for group in groups) - 1)
    cell_fraction = room / row_columns                        # a cell's share of the width, the same in every row
    text_shown = widest <= MOST_HEADS_WITH_TEXT
    font = TEXT_FONT if cell_fraction * PANELS_WIDTH >= TEXT_CELL else cell_font(widest, 5)
    header = HEAD_LABELS + TITLE_LINE + (SUBTITLE_LINE if subtitles else 0)
    # Px down the cells: each row of panels as many cell rows as its tallest panel has layers, a header between.
    heights = [max(values[i].shape[0] for i in group) for group in groups]
    row_px = max(2 * cell_size(widest), 40, -(-MIN_PLOT // max(1, sum(heights))))
    plot = sum(heights) * row_px + (len(groups) - 1) * (header + ROW_GAP)
    data, layout, annotations = [], {}, []
    top = 0
    for group, layers in zip(groups, heights):
        y_domain = [1 - (top + layers * row_px) / plot, 1 - top / plot]
        start = 0.0
        for position, i in enumerate(group):
            z, hover, labels = values[i], hovers[i], columns[i]
            end = min(1.0, start + widths[i] * cell_fraction)
            suffix = "" if i == 0 else str(i + 1)
            text = np.vectorize(cell_text, otypes=[object])(z) if z.size else z
            data.append(go.Heatmap(
                z=colours[i], x=labels, y=list(range(z.shape[0])), text=text, customdata=hover, coloraxis="coloraxis",
                texttemplate="%{text}" if text_shown else "", xgap=2, ygap=2, xaxis=f"x{suffix}",
                yaxis=f"y{suffix}", textfont=dict(size=font), hoverongaps=False,
                hovertemplate="%{customdata}<extra></extra>"))
            layout[f"xaxis{suffix}"] = dict(every_label(len(labels), side="top"), domain=[start, end],
                                            anchor=f"y{suffix}", showgrid=False)
            layout[f"yaxis{suffix}"] = dict(every_label(z.shape[0], autorange="reversed"), anchor=f"x{suffix}",
                                            domain=y_domain, showgrid=False,
                                            title=dict(text=rows_label, standoff=10) if position == 0 else None)
            # Panel titles (and subtitles) stand above the head labels, which sit on top of each panel.
            middle = (start + end) / 2
            if subtitles:
                annotations.append(dict(text=subtitles[i], x=middle, y=y_domain[1], xref="paper", yref="paper",
                                        xanchor="center", yanchor="bottom", yshift=HEAD_LABELS, showarrow=False,
                                        font=dict(size=12, color="#444")))
            annotations.append(dict(text=titles[i], x=middle, y=y_domain[1], xref="paper", yref="paper",
                                    xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14),
                                    yshift=HEAD_LABELS + (SUBTITLE_LINE if subtitles else 0)))
            start = end + PANEL_GAP
        top += layers * row_px + header + ROW_GAP
    margin_top = FIGURE_TITLE + 18 * title.count("<br>") + header
    colour = dict(colour)
    colorbar = dict(thickness=14, len=1, lenmode="fraction", tickfont=dict(size=12), **colour.pop("colorbar", {}))
    return go.Figure(data=data, layout=dict(
        layout, annotations=annotations, plot_bgcolor="rgba(0,0,0,0)",
        title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=10 + 14 * title.count("<br>"))),
        height=margin_top + plot + 10, width=FIGURE_WIDTH, margin=dict(l=10, r=10, t=margin_top, b=10),
        coloraxis=dict(colorbar=colorbar, **colour)))


def above_chance(scores: np.ndarray, chance: float, best: float) -> np.ndarray:
    """Where a score lies between chance (0) and a perfect head's score (1), on a log scale: a head at 10× chance
    of a panel whose perfect head scores 100× chance is halfway. Below chance: 0."""
    if not (chance > 0 and best > chance):
        return np.clip(np.asarray(scores, dtype=float), 0, 1)
    ratio = np.maximum(np.asarray(scores, dtype=float), chance) / chance
    return np.clip(np.log(ratio) / np.log(best / chance), 0, 1)


def detector_maps(detection, kind: str) -> go.Figure:
    """One self-attention kind's heads, a panel per detector, chance and the best possible score under each
    panel's title. Colours show how far above chance each score is (above_chance: pale at chance, dark red for a
    perfect head, log scale), so that a head at a few times chance stands out although every score is small; the
    score itself is written in each cell. detection: an explorer.analyses.sentence.detectors.HeadDetection."""
    from explorer.analyses.sentence.detectors import DETECTOR_TITLES

    names = list(detection.scores[kind])
    values = [detection.scores[kind][name] for name in names]
    layers, heads = values[0].shape
    titles, subtitles, hovers, colours = [], [], [], []
    for name, z in zip(names, values):
        chance, best = detection.chance[kind][name], detection.ceiling[kind][name]
        titles.append(DETECTOR_TITLES[name])
        subtitles.append(f"chance {chance:.3f} · best {best:.3f}")
        colours.append(above_chance(z, chance, best))
        hovers.append(np.array([[f"{SHORT_NAMES[kind]}.{layer}.{head}<br>{DETECTOR_TITLES[name]} {z[layer, head]:.3f}"
                                 f"<br>chance {chance:.3f}, a perfect head {best:.3f}" for head in range(heads)]
                                for layer in range(layers)], dtype=object))
    return _panels(values, titles, hovers, [[str(h) for h in range(heads)]] * len(values),
                   # A line each: as one title and one subtitle they ran past the figure's edge at 1024 px.
                   f"Head detector scores, {KIND_TITLES[kind][0].lower() + KIND_TITLES[kind][1:]}<br><sup>rows: "
                   "layers, columns: heads; the number: the score</sup><br><sup>colour: how far above chance "
                   "(pale) toward a perfect head (dark red), log scale</sup>",
                   dict(cmin=0, cmax=1, colorscale="YlOrRd",
                        colorbar=dict(title=dict(text="score: chance → a perfect head", side="right"), tickvals=[0, 0.5, 1],
                                      ticktext=["chance<br>or below", "halfway<br>(log)", "a perfect<br>head"])),
                   subtitles=subtitles, colours=colours)


def patching_maps(result, title: str = "") -> go.Figure:
    """Restored share per head (a panel per kind) and per layer output (a panel, a column per stack), on a
    diverging scale centred on 0 (−1 to 1; a cell beyond is drawn at the end colour, its value printed).
    result: an explorer.analyses.sentence.patching.PatchingResult."""
    values, titles, hovers, columns = [], [], [], []
    for kind, z in result.heads.items():
        layers, heads = z.shape
        values.append(z)
        titles.append(f"{KIND_TITLES[kind]}: z")
        columns.append([str(h) for h in range(heads)])
        hovers.append(np.array([[f"{SHORT_NAMES[kind]}.{layer}.{head} (z)<br>restored {z[layer, head]:.3f}"
                                 for head in range(heads)] for layer in range(layers)], dtype=object))
    stacks = list(result.layer_outputs)
    layers = max(len(v) for v in result.layer_outputs.values())
    outputs = np.full((layers, len(stacks)), np.nan)
    for i, stack in enumerate(stacks):
        outputs[: len(result.layer_outputs[stack]), i] = result.layer_outputs[stack]
    values.append(outputs)
    titles.append("layer outputs")
    columns.append([STACK_LABELS[stack] for stack in stacks])
    hovers.append(np.array([[f"{stack} layer {layer} output<br>restored {outputs[layer, i]:.3f}"
                             for i, stack in enumerate(stacks)] for layer in range(layers)], dtype=object))
    return _panels(values, titles, hovers, columns,
                   # On one line it ran 18 px past the figure's edge in a 1024 px window: the axes' key under it.
                   title or "Share of the clean output's log-probability restored<br><sup>one value patched at a "
                            "time; rows: layers, columns: heads</sup>",
                   dict(cmin=-1, cmax=1, cmid=0, colorscale="RdBu", reversescale=True,
                        colorbar=dict(title=dict(text="restored", side="right"))))
