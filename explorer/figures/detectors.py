"""Figures of head detectors and activation patching: layers × heads maps, one panel per detector or kind, the
value printed in each cell (while cells are wide enough) and on hover."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import cell_size, every_label
from explorer.figures.head_roles import MOST_HEADS_WITH_TEXT, cell_font
from models.vocabulary import KIND_TITLES, SHORT_NAMES

PANEL_GAP = 0.04
STACK_LABELS = {"encoder": "enc", "decoder": "dec"}


def cell_text(value: float) -> str:
    """Two decimals, a small negative value read as 0.00 (not −0.00), nothing for a missing one."""
    if not np.isfinite(value):
        return ""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def _panels(values: list[np.ndarray], titles: list[str], hovers: list[np.ndarray], columns: list[list[str]],
            title: str, colour: dict, rows_label: str = "layer") -> go.Figure:
    """Heatmaps side by side, one colour axis; values [layers, columns] each. Built in one go (domains computed
    here, not by make_subplots and per-axis updates: plotly's checks made that 0.2 s a figure)."""
    widest = max(v.shape[1] for v in values)
    layers = max(v.shape[0] for v in values)
    widths = np.array([max(1, v.shape[1]) for v in values], dtype=float)
    room = 1 - PANEL_GAP * (len(values) - 1)
    starts = np.concatenate([[0], np.cumsum(widths / widths.sum() * room + PANEL_GAP)[:-1]])
    data, layout, annotations = [], {}, []
    for i, (z, hover, labels, start, width) in enumerate(zip(values, hovers, columns, starts, widths), start=1):
        start, end = float(start), min(1.0, float(start + width / widths.sum() * room))
        suffix = "" if i == 1 else str(i)
        text = np.vectorize(cell_text, otypes=[object])(z) if z.size else z
        data.append(go.Heatmap(
            z=z, x=labels, y=list(range(z.shape[0])), text=text, customdata=hover, coloraxis="coloraxis",
            texttemplate="%{text}" if widest <= MOST_HEADS_WITH_TEXT else "", xgap=2, ygap=2, xaxis=f"x{suffix}",
            yaxis=f"y{suffix}", textfont=dict(size=cell_font(widest, 5)), hoverongaps=False,
            hovertemplate="%{customdata}<extra></extra>"))
        layout[f"xaxis{suffix}"] = dict(every_label(len(labels), side="top"), domain=[start, end], anchor=f"y{suffix}",
                                        showgrid=False)
        layout[f"yaxis{suffix}"] = dict(every_label(z.shape[0], autorange="reversed"), anchor=f"x{suffix}",
                                        showgrid=False, title=dict(text=rows_label, standoff=4) if i == 1 else None)
        # Panel titles stand above the head labels, which sit on top of each panel.
        annotations.append(dict(text=titles[i - 1], x=(start + end) / 2, y=1, xref="paper", yref="paper",
                                xanchor="center", yanchor="bottom", yshift=28, showarrow=False, font=dict(size=12)))
    return go.Figure(data=data, layout=dict(
        layout, annotations=annotations, plot_bgcolor="rgba(0,0,0,0)",
        title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
        height=130 + 2 * cell_size(widest) * layers, margin=dict(l=10, r=10, t=115, b=10),
        coloraxis=dict(colorbar=dict(thickness=12), **colour)))


def detector_maps(detection, kind: str) -> go.Figure:
    """One self-attention kind's heads, a panel per detector, coloured 0–1, chance and the best possible score in
    each panel's title. detection: an explorer.detectors.HeadDetection."""
    from explorer.detectors import DETECTOR_TITLES

    names = list(detection.scores[kind])
    values = [detection.scores[kind][name] for name in names]
    layers, heads = values[0].shape
    titles, hovers = [], []
    for name, z in zip(names, values):
        chance, best = detection.chance[kind][name], detection.ceiling[kind][name]
        titles.append(f"{DETECTOR_TITLES[name]}<br><sup>chance {chance:.3f} · best {best:.3f}</sup>")
        hovers.append(np.array([[f"{SHORT_NAMES[kind]}.{layer}.{head}<br>{DETECTOR_TITLES[name]} {z[layer, head]:.3f}"
                                 f"<br>chance {chance:.3f}, a perfect head {best:.3f}" for head in range(heads)]
                                for layer in range(layers)], dtype=object))
    return _panels(values, titles, hovers, [[str(h) for h in range(heads)]] * len(values),
                   f"Head detector scores, {KIND_TITLES[kind][0].lower() + KIND_TITLES[kind][1:]} (rows: layers, columns: heads)",
                   dict(cmin=0, cmax=1, colorscale="YlOrRd", colorbar_title=dict(text="score", side="right")))


def patching_maps(result, title: str = "") -> go.Figure:
    """Restored share per head (a panel per kind) and per layer output (a panel, a column per stack), on a
    diverging scale centred on 0 (−1 to 1; a cell beyond is drawn at the end colour, its value printed).
    result: an explorer.patching.PatchingResult."""
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
                   title or "Share of the clean output's log-probability restored (rows: layers, columns: heads)",
                   dict(cmin=-1, cmax=1, cmid=0, colorscale="RdBu", reversescale=True,
                        colorbar_title=dict(text="restored", side="right")))
