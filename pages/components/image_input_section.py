"""The Images page's picture: a digit of the held-out split by its number, or one drawn on an 8 × 8 grid of ink
levels (0 blank … 16 full ink, as scikit-learn's digits are stored), started from the chosen digit. Kept in the
URL (`digit=`), so a link opens the same digit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.capture.image_inputs import held_out_digit
from explorer.capture.image_trace import trace_image
from models.digits import held_out
from pages.components import url_state

INK_LEVELS = 16         # scikit-learn's digits: 17 grey levels, 0 … 16
SOURCES = ("a held-out digit", "draw one")


def traced_image(model):
    """(the digit chosen on the page, picker drawn here, traced through the whole model; its label or None): the
    Lesson's input."""
    pixels, description, label = chosen_image(model.image_shape)
    return trace_image(model, pixels, description=description), label


def chosen_image(shape: tuple[int, int]) -> tuple[np.ndarray, str, str | None]:
    """(pixels 0 … 1, what they are, the held-out digit's label, or None for a drawing) as chosen on the page."""
    count = len(held_out().labels)
    url_state.kept("image_digit", "digit", range(count), encode=str, default=0)
    left, right = st.columns([1, 2])
    number = left.number_input(f"Held-out digit (0–{count - 1})", 0, count - 1, key="image_digit",
                               help="The 360 digits the model never saw in training (20% of scikit-learn's 1,797, "
                                    "split once with seed 0).")
    url_state.keep("digit", str(number))
    source = right.radio("Image", SOURCES, key="image_source", horizontal=True,
                         help="Draw: change the ink levels in the grid (0 blank paper … 16 full ink); the grid "
                              "starts from the held-out digit chosen on the left.")
    pixels, description = held_out_digit(int(number))
    label = str(held_out().labels[int(number)])
    if source == SOURCES[0] or tuple(pixels.shape) != tuple(shape):
        return pixels, description, label
    start = pd.DataFrame(np.rint(pixels * INK_LEVELS).astype(int), columns=[str(c) for c in range(shape[1])])
    drawn = st.data_editor(start, key=f"image_drawing_{number}", width="content", column_config={
        column: st.column_config.NumberColumn(column, min_value=0, max_value=INK_LEVELS, step=1, width="small")
        for column in start.columns})
    ink = np.clip(drawn.to_numpy(dtype=float), 0, INK_LEVELS) / INK_LEVELS
    changed = not np.allclose(ink, pixels, atol=0.5 / INK_LEVELS)
    if changed:
        return ink.astype(np.float32), f"your drawing (from held-out digit {number})", None
    return ink.astype(np.float32), description, label
