"""One token's attention in every head of several models, the models side by side (the Compare page): a column per
head, each model's tokens down the side, so every token keeps its label at any sentence length and three models
(11 heads) fit a projector's column.

An HTML table (st.html), not a plotly figure: a change to Compare at 45 words took 1.11 s with the plotly figure
and 0.96 s with this table (an interleaved A/B); coloured cells with labels need no plot.
"""

from __future__ import annotations

import html

import numpy as np

from explorer.figures.common import (
    ABSOLUTE,
    PROJECTOR_COLUMN,
    SMALLEST_FONT,
    dense_cell,
    font,
    printed_cell,
    projector_mode,
    text_width,
    weight_range,
)
from explorer.figures.html_cells import coloured_cell, figure_box, measure_name, scale_colours, table_html, weight_key

STRIP_LABEL = 12        # characters of a token a row's label keeps (its hover has it whole): three models' labels fit
GAP = 14                # px between two models' columns


def strip_label(position: int, token: str) -> str:
    """A row's label: "12 ▁swimming", a long piece cut to STRIP_LABEL characters (its hover shows it whole)."""
    shown = token if len(token) <= STRIP_LABEL else token[:STRIP_LABEL - 1] + "…"
    return f"{position} {shown}"


def short_names(names: list[str]) -> list[str]:
    """Model names without the start they share up to a - _ or space ("en-de-h8", "en-de-h2" → "h8", "h2"), so
    each fits over a one-head column; the names whole when nothing is shared or a name would be left empty."""
    shared = 0
    while all(len(name) > shared + 1 and name[shared] == names[0][shared] for name in names):
        shared += 1
    cut = max((names[0].rfind(mark, 0, shared) for mark in "-_ "), default=-1) + 1
    return [name[cut:] for name in names] if len(names) > 1 and cut else list(names)


def head_cell(strips: dict[str, np.ndarray], label_px: int) -> int:
    """Px across a head's column: the densest cell that still labels a row (dense_cell()); in projector mode the
    heads share the folded sidebar's column, up to twice the width that prints a weight (a class cannot hover)."""
    cell = dense_cell()
    if not projector_mode():
        return cell
    heads = sum(np.shape(strip)[0] for strip in strips.values())
    room = PROJECTOR_COLUMN - label_px - 30 - GAP * (len(strips) - 1)
    return int(np.clip(room // max(heads, 1), cell, 2 * printed_cell()))


def strips_table(strips: dict[str, np.ndarray], tokens: dict[str, list[str]], title: str, subtitle: str,
                 focus: str, direction: str, scale: str = ABSOLUTE) -> str:
    """strips {model: [heads, tokens]}: the focus token's weight with each of the model's tokens (tokens {model:
    its tokens}); direction "from": what the focus token attends to (its row), "to": which tokens attend to it
    (its column, as in cross-attention). Models with the same tokens share the labels on the left; otherwise each
    has its own. Every text is escaped: the tokens are the user's."""
    names = list(strips)
    shared = all(tokens[name] == tokens[names[0]] for name in names)
    size, small = font(SMALLEST_FONT), font(12)
    labels = {name: [strip_label(i, token) for i, token in enumerate(tokens[name])] for name in names}
    label_px = max(text_width(label, size) for name in names for label in labels[name]) + 8
    width, height = head_cell(strips, label_px), dense_cell()
    printed = width >= printed_cell()
    longest = max(len(tokens[name]) for name in names)
    everything = np.concatenate([np.ravel(strips[name]) for name in names])
    low, high = weight_range(everything, scale)
    measure = measure_name(scale)
    own_labels = [index == 0 or not shared for index in range(len(names))]
    label = f'style="font-weight: normal; font-size: {size}px; text-align: right; padding: 0 4px; white-space: nowrap"'
    head = f'style="font-weight: normal; font-size: {small}px; text-align: center; padding: 0"'
    spacer = f'<th style="width: {GAP}px; padding: 0"></th>'

    def corner(index: int) -> str:
        return ("" if index == 0 else spacer) + ("<th></th>" if own_labels[index] else "")

    model_row = "".join(corner(i) + f'<th colspan="{np.shape(strips[name])[0]}" {head}>{html.escape(short)}</th>'
                        for i, (name, short) in enumerate(zip(names, short_names(names))))
    head_row = "".join(corner(i) + "".join(f"<th {head}>{h}</th>" for h in range(np.shape(strips[name])[0]))
                       for i, name in enumerate(names))
    colours = {name: np.reshape(scale_colours("Blues", np.asarray(strips[name], dtype=float).T, low, high),
                                np.shape(strips[name])[::-1]) for name in names}
    rows = [f"<tr>{model_row}</tr>", f"<tr>{head_row}</tr>"]
    for row in range(longest):
        cells = []
        for index, name in enumerate(names):
            if index:
                cells.append('<td style="padding: 0"></td>')
            present = row < len(tokens[name])
            if own_labels[index]:
                whole = html.escape(tokens[name][row]) if present else ""
                cells.append(f'<th {label} title="{whole}">{html.escape(labels[name][row]) if present else ""}</th>')
            for h in range(np.shape(strips[name])[0]):
                if not present:
                    cells.append("<td></td>")
                    continue
                weight = float(strips[name][h][row])
                said = (f"“{focus}” attends to {row} “{tokens[name][row]}”" if direction == "from"
                        else f"{row} “{tokens[name][row]}” attends to “{focus}”")
                written = f"{weight:.2f}" if printed else ""        # a class cannot hover: the weight, printed
                cells.append(coloured_cell(written, f"{name} · head {h}\n{said}\n{measure} {weight:.3f}",
                                           colours[name][row, h], width, height, size, model=name, head=h, row=row))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return figure_box(title, table_html(rows, "1px 0"), weight_key(scale, low, high), subtitle, "focus-strips")
