"""Where one word looks, in every layer and head at once (explorer/analyses/sentence/word_focus.py): a layers × heads
grid, each cell coloured by the weight the word gives its most-attended other word, with that word and the percentage
written in.

Sized for the narrowest main column the app has (COLUMN px: a 1024 px window with the sidebar open): the cells'
text is WORD_FONT px (more in projector mode, common.font), every label whole; when a model's heads do not fit one
row of cells that wide, they are split over several blocks, one under the other, rather than cut or shrunk.
"""

from __future__ import annotations

import numpy as np

from explorer.analyses.sentence.word_focus import Focus, WordAttention, percent, quoted
from explorer.figures.common import font
from explorer.figures.html_cells import coloured_cell, figure_box, scale_colours, table_html

COLUMN = 560            # px of the main column at a 1024 px window width, sidebar open (564 measured in Chromium)
ROW_LABELS = 56         # px for "layer 0" beside the grid
WORD_FONT = 12          # px of the text in a cell (≥ 11 px)
CHARACTER = 0.58        # a character's width in ems: "because" at 12 px took 45 px in Chromium (0.54), with room
CELL_PADDING = 10       # px of a cell around its text
ROW_HEIGHT = 46         # px of a layer's row: two lines of text


def cell_width(words: list[str]) -> int:
    """px a cell needs for its longest word (or "100%") at WORD_FONT."""
    longest = max([len(word) for word in words] + [len("pruned"), len("100%")])
    return int(np.ceil(CHARACTER * font(WORD_FONT) * longest)) + CELL_PADDING


def heads_per_block(heads: int, words: list[str], column: int = COLUMN) -> int:
    """How many heads a row of cells takes in `column` px with every word whole (at least 1)."""
    return max(1, min(heads, (column - ROW_LABELS) // cell_width(words)))


def cell_texts(reading: WordAttention, found: Focus) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(colour values, cell text, hover text), each [layers, heads], plain text with lines split by "\n"; a pruned
    head is blank and says so."""
    layers, heads = found.weight.shape
    values = np.where(np.isnan(found.weight), np.nan, found.weight).astype(float)
    text = np.empty((layers, heads), dtype=object)
    hover = np.empty((layers, heads), dtype=object)
    word = quoted(reading.words[found.word])
    for layer in range(layers):
        for head in range(heads):
            name = reading.head_name(layer, head)
            rest = (f"on itself {percent(found.itself[layer, head])}\n"
                    f"on special tokens and punctuation {percent(found.parked[layer, head])}")
            if (layer, head) in reading.pruned:
                values[layer, head] = np.nan
                text[layer, head] = "pruned"
                hover[layer, head] = f"{name}: pruned (masked in this trace)"
            elif found.target[layer, head] < 0:
                text[layer, head] = "—"
                hover[layer, head] = f"{name}: {word} has no other word to look at\n{rest}"
            else:
                target = reading.words[found.target[layer, head]]
                text[layer, head] = f"{target}\n{percent(found.weight[layer, head])}"
                hover[layer, head] = f"{name}: {word} → “{target}” {percent(found.weight[layer, head])}\n{rest}"
    return values, text, hover


def cell_backgrounds(values: np.ndarray) -> np.ndarray:
    """Each cell's background: plotly's "Blues" at the weight (0–1); a pruned head (nan) grey."""
    return np.reshape([background if np.isfinite(value) else "#eeeeee"
                       for background, value in zip(scale_colours("Blues", values, 0.0, 1.0), values.ravel())],
                      values.shape)


def word_focus_grid(reading: WordAttention, found: Focus, column: int = COLUMN) -> str:
    """Rows layers, columns heads (in blocks when they do not fit `column` px), as an HTML table for st.html: each
    cell its word and weight written in, coloured by the weight (darker is more, 0–1), the rest on hover (its
    title). A table, not a plotly figure: the figure took the browser 0.3 s of each change to the Attention page
    (1.17 s → 0.88 s without it, 45 words); text in cells needs no plot. Every text is escaped: the words are the
    user's."""
    values, text, hover = cell_texts(reading, found)
    layers, heads = values.shape
    shown = [reading.words[target] for target in np.unique(found.target) if target >= 0]     # the cells' words
    per_block = heads_per_block(heads, shown, column)
    count = -(-heads // per_block)
    per_block = -(-heads // count)          # as even as can be: 16 heads at 7 a row are 6 + 5 + 5, not 7 + 7 + 2
    width, size = cell_width(shown), font(WORD_FONT)
    backgrounds = cell_backgrounds(values)

    label = f"padding: 0 6px; font-weight: normal; font-size: {size}px; white-space: nowrap"
    tables = []
    for start in range(0, heads, per_block):
        block = range(start, min(heads, start + per_block))
        rows = ["<tr><th></th>" + "".join(f'<th style="{label}; text-align: center">head {head}</th>' for head in block)
                + "</tr>"]
        for layer in range(layers):
            cells = "".join(coloured_cell(text[layer, head], hover[layer, head], backgrounds[layer, head], width,
                                          font(ROW_HEIGHT) - 4, size, layer=layer, head=head) for head in block)
            rows.append(f'<tr><th style="{label}; text-align: right">layer {layer}</th>{cells}</tr>')
        tables.append(table_html(rows))
    return figure_box(f"Where {quoted(reading.words[found.word])} looks: {reading.kind} self-attention",
                      "".join(tables), name="word-focus-grid")


def focus_table(reading: WordAttention, found: Focus):
    """The grid's numbers as a table (one row a head), for the CSV download."""
    import pandas as pd

    rows = []
    for layer in range(found.weight.shape[0]):
        for head in range(found.weight.shape[1]):
            target = found.target[layer, head]
            rows.append({"head": reading.head_name(layer, head), "word": reading.words[found.word],
                         "most_attended_other_word": reading.words[target] if target >= 0 else "",
                         "weight": float(found.weight[layer, head]), "on_itself": float(found.itself[layer, head]),
                         "on_special_and_punctuation": float(found.parked[layer, head]),
                         "pruned": (layer, head) in reading.pruned})
    return pd.DataFrame(rows)
