"""The logit lens as a heatmap (nostalgebraist 2020): a row per decoding step, a column per layer (the embeddings
first, the model's output last); the colour is the probability of the token the step finally chose through that
layer's lens, the text in a cell that layer's top token, the hover its top 5.

Steps run down the page so that every step keeps a row at the sizing rule's height and label (5, 20 and 45 steps
all labelled, common.every_label), and layers run across in columns wide enough to write a token in: a model has a
few layers, a sentence many steps.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.analyses.sentence.logit_lens import LogitLens
from explorer.figures.common import (
    NARROW_WIDTH,
    axis_length,
    display_tokens,
    every_label,
    font,
    is_long,
    label_font,
    label_room,
    position_labels,
    title_height,
    wrapped_title,
    zoom_note,
)
from explorer.figures.token_bars import probability_text

CHAR_WIDTH = 0.62           # a character's width in em, generously (common.label_room's measure)
COLUMN = (44, 110)          # px a layer's column: at least a short token, at most a long one
COLOUR_BAR = 90             # px right of the cells
MIN_WIDTH = 480             # px: the title's lines fit


def cut(token: str, chars: int) -> str:
    return token if len(token) <= chars else token[: max(chars - 1, 1)] + "…"


def logit_lens_figure(lens: LogitLens) -> go.Figure:
    steps, layers = len(lens.steps), len(lens.layers)
    size = label_font(steps)
    tops = [[lens.top_tokens[r][s][0] for r in range(layers)] for s in range(steps)]
    longest = max((len(token) for row in tops for token in row), default=4)
    labels_width = label_room(position_labels(lens.steps), steps, angle=90)
    # Columns sized for a projector's column (the figure keeps its width at every window width; Streamlit
    # squeezed a wider one into 564 px at 1024 px, running the tokens into each other).
    room = (NARROW_WIDTH - 40 - labels_width - COLOUR_BAR) // max(layers, 1)
    column = int(np.clip(min(room, CHAR_WIDTH * size * longest + 10), *COLUMN))
    chars = max(3, int((column - 8) // (CHAR_WIDTH * size)))
    # A long output, or layers too many for a token's room each: the colours alone, the tokens on hover.
    written = not is_long(steps) and room >= COLUMN[0]
    text = [[display_tokens([cut(token, chars)])[0] for token in row] for row in tops]
    hover = [[hover_text(lens, r, s) for r in range(layers)] for s in range(steps)]
    rows = position_labels(lens.steps)
    figure = go.Figure(go.Heatmap(
        z=lens.chosen_probs.T, x=lens.layers, y=rows, zmin=0, zmax=1, colorscale="Blues", text=text,
        texttemplate="%{text}" if written else None, textfont=dict(size=size), hovertext=hover, hoverinfo="text",
        colorbar=dict(title="p(chosen)", thickness=12, len=min(1.0, 300 / max(axis_length(steps), 1)))))
    what = "position" if lens.what == "masked" else "step"
    title = (f"Logit lens (nostalgebraist 2020)<br><sup>each {lens.stack} layer's residual stream through the final "
             f"norm and output projection</sup><br><sup>colour: p(the token the {what} finally "
             f"{'hid' if lens.what == 'masked' else 'chose'}); text: the layer's top token; hover: its top 5</sup>")
    if is_long(steps):
        title += zoom_note(steps, layers)
    width = min(max(column * layers + labels_width + COLOUR_BAR + 40, MIN_WIDTH), NARROW_WIDTH)
    # The title in lines of the figure's width (plotly cuts it at the edge), then the layer names at 30° and
    # "layer" above the cells: measured, so that at a projector's larger type no line runs over another.
    title = wrapped_title(title, width - 20)
    top = title_height(title) + label_room(lens.layers, layers, angle=30) + font(12) + 12
    figure.update_xaxes(**every_label(layers, side="top", title="layer", tickangle=-30))
    figure.update_yaxes(**every_label(steps, autorange="reversed", title=what))
    figure.update_layout(title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=12)),
                         width=width, height=max(axis_length(steps) + top + 20, 260),
                         margin=dict(t=top, l=10, r=10, b=10))
    return figure


def hover_text(lens: LogitLens, row: int, step: int) -> str:
    chosen = display_tokens([lens.steps[step]])[0]
    tops = "<br>".join(f"{display_tokens([token])[0]}  {probability_text(float(p))}"
                       for token, p in zip(lens.top_tokens[row][step], lens.top_probs[row, step]))
    verb = "hid" if lens.what == "masked" else "chose"
    return (f"{'position' if lens.what == 'masked' else 'step'} {step}: {verb} {chosen}<br>{lens.layers[row]}: "
            f"p({chosen}) = {probability_text(float(lens.chosen_probs[row, step]))}, rank "
            f"{int(lens.chosen_ranks[row, step])}<br>top {len(lens.top_tokens[row][step])}:<br>{tops}")
