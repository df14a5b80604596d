"""Where one word looks, in every layer and head at once (explorer/analyses/word_focus.py): a layers × heads grid, each cell
coloured by the weight the word gives its most-attended other word, with that word and the percentage written in.

Sized for the narrowest main column the app has (COLUMN px: a 1024 px window with the sidebar open): the cells'
text is WORD_FONT px (more in projector mode, common.font), every label whole; when a model's heads do not fit one
row of cells that wide, they are split over several blocks, one under the other, rather than cut or shrunk.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.figures.common import font
from explorer.analyses.word_focus import Focus, WordAttention, percent, quoted

COLUMN = 560            # px of the main column at a 1024 px window width, sidebar open (564 measured in Chromium)
ROW_LABELS = 56         # px for "layer 0" beside the grid
WORD_FONT = 12          # px of the text in a cell (≥ 11 px)
CHARACTER = 0.58        # a character's width in ems: "because" at 12 px took 45 px in Chromium (0.54), with room
CELL_PADDING = 10       # px of a cell around its text
ROW_HEIGHT = 46         # px of a layer's row: two lines of text
BLOCK_GAP = 40          # px between blocks (the next block's "head" labels sit in it)


def cell_width(words: list[str]) -> int:
    """px a cell needs for its longest word (or "100%") at WORD_FONT."""
    longest = max([len(word) for word in words] + [len("pruned"), len("100%")])
    return int(np.ceil(CHARACTER * font(WORD_FONT) * longest)) + CELL_PADDING


def heads_per_block(heads: int, words: list[str], column: int = COLUMN) -> int:
    """How many heads a row of cells takes in `column` px with every word whole (at least 1)."""
    return max(1, min(heads, (column - ROW_LABELS) // cell_width(words)))


def cell_texts(reading: WordAttention, found: Focus) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(colour values, cell text, hover text), each [layers, heads]; a pruned head is blank and says so."""
    layers, heads = found.weight.shape
    values = np.where(np.isnan(found.weight), np.nan, found.weight).astype(float)
    text = np.empty((layers, heads), dtype=object)
    hover = np.empty((layers, heads), dtype=object)
    word = html.escape(quoted(reading.words[found.word]), quote=False)
    for layer in range(layers):
        for head in range(heads):
            name = reading.head_name(layer, head)
            rest = (f"on itself {percent(found.itself[layer, head])}<br>"
                    f"on special tokens and punctuation {percent(found.parked[layer, head])}")
            if (layer, head) in reading.pruned:
                values[layer, head] = np.nan
                text[layer, head] = "pruned"
                hover[layer, head] = f"{name}: pruned (masked in this trace)"
            elif found.target[layer, head] < 0:
                text[layer, head] = "—"
                hover[layer, head] = f"{name}: {word} has no other word to look at<br>{rest}"
            else:
                target = html.escape(reading.words[found.target[layer, head]], quote=False)
                text[layer, head] = f"{target}<br>{percent(found.weight[layer, head])}"
                hover[layer, head] = (f"{name}: {word} → “{target}” {percent(found.weight[layer, head])}<br>{rest}")
    return values, text, hover


def word_focus_grid(reading: WordAttention, found: Focus, column: int = COLUMN) -> go.Figure:
    """Rows layers, columns heads (in blocks when they do not fit `column` px); no colour bar (the numbers are
    written in; darker is more weight, 0–1)."""
    values, text, hover = cell_texts(reading, found)
    layers, heads = values.shape
    shown = [reading.words[target] for target in np.unique(found.target) if target >= 0]     # the cells' words
    per_block = heads_per_block(heads, shown, column)
    count = -(-heads // per_block)
    per_block = -(-heads // count)          # as even as can be: 16 heads at 7 a row are 6 + 5 + 5, not 7 + 7 + 2
    blocks = [range(start, min(heads, start + per_block)) for start in range(0, heads, per_block)]
    block_height = layers * font(ROW_HEIGHT)
    figure = make_subplots(rows=len(blocks), cols=1, vertical_spacing=0)
    for row, block in enumerate(blocks, start=1):
        columns = list(block)
        figure.add_trace(go.Heatmap(
            z=values[:, columns], x=[f"head {head}" for head in columns],
            y=[f"layer {layer}" for layer in range(layers)],
            text=text[:, columns], texttemplate="%{text}", textfont=dict(size=font(WORD_FONT)),
            customdata=hover[:, columns], hovertemplate="%{customdata}<extra></extra>",
            zmin=0, zmax=1, colorscale="Blues", showscale=False, xgap=2, ygap=2), row=row, col=1)
        # a shorter last block keeps the others' cell width (its axis spans its share of the row)
        figure.update_xaxes(type="category", side="top", tickfont=dict(size=font(WORD_FONT)), row=row, col=1,
                            fixedrange=True, domain=[0.0, len(columns) / per_block])
        figure.update_yaxes(type="category", autorange="reversed", tickfont=dict(size=font(WORD_FONT)), row=row, col=1,
                            fixedrange=True)
    title = f"Where {html.escape(quoted(reading.words[found.word]), quote=False)} looks: {reading.kind} self-attention"
    gap, top, bottom = font(BLOCK_GAP), font(30) + font(24), 10        # title, then the first block's head labels
    plot = len(blocks) * block_height + (len(blocks) - 1) * gap
    for index in range(len(blocks)):       # each block its rows' height, a gap for the next block's head labels
        upper = 1 - index * (block_height + gap) / plot
        figure.update_yaxes(domain=[max(0.0, upper - block_height / plot), upper], row=index + 1, col=1)
    figure.update_layout(title=dict(text=title, font=dict(size=font(13)), x=0, xanchor="left", y=1.0, yanchor="top",
                                    yref="container", pad=dict(t=8, l=4)),
                         height=plot + top + bottom, margin=dict(l=10, r=10, t=top, b=bottom))
    return figure


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
