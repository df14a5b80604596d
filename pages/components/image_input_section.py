"""The Images page's (and the image Lesson's) picture: a digit of the held-out split by its number (kept in the URL,
`digit=`, so a link opens the same digit), or one drawn on a canvas of squares, one a pixel: a box dragged over
them inks them (or blanks them with the eraser), starting from the chosen digit. Offline: the canvas is a plotly
figure whose selection Streamlit returns."""

from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.capture.image_inputs import held_out_digit
from explorer.capture.image_trace import trace_image
from explorer.figures.image import canvas_figure
from explorer.models.digits import held_out
from explorer.pages.components import url_state

SOURCES = ("a held-out digit", "draw one")
PENS = ("ink", "eraser")


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
    number = left.number_input(f"Held-out image no. (0–{count - 1})", 0, count - 1, key="image_digit",
                               help="The image's place among the 360 the model never saw in training (20% of "
                                    "scikit-learn's 1,797 digits, split once with seed 0): not the digit it shows.")
    url_state.keep("digit", str(number))
    source = right.radio("Image", SOURCES, key="image_source", horizontal=True,
                         help="Draw: drag a box over squares of the canvas to ink them (a small box for one), or "
                              "blank them with the eraser; the canvas starts from the held-out digit on the left.")
    pixels, description = held_out_digit(int(number))
    label = str(held_out().labels[int(number)])
    if source == SOURCES[0] or tuple(pixels.shape) != tuple(shape):
        return pixels, description, label
    ink = drawing(pixels, int(number))
    if not np.array_equal(ink, pixels):
        return ink, f"your drawing (from held-out image no. {number})", None
    return ink, description, label


def painted(pixels: np.ndarray, squares: list[int], pen: str) -> np.ndarray:
    """The pixels with the chosen squares (row-major indices) inked, or blanked with the eraser."""
    result = pixels.copy()
    result.flat[squares] = 1.0 if pen == PENS[0] else 0.0
    return result


def drawing(start: np.ndarray, number: int) -> np.ndarray:
    """The canvas, kept in this session: started from held-out digit `number`, each box painted once."""
    state = st.session_state
    if state.get("image_canvas_from") != number:
        state["image_canvas_from"], state["image_canvas"] = number, start.copy()
    pen_column, clear_column, again_column = st.columns([2, 1, 1])
    pen = pen_column.radio("Pen", PENS, key="image_pen", horizontal=True)
    if clear_column.button("Blank paper", key="image_clear"):
        state["image_canvas"] = np.zeros_like(start)
    if again_column.button(f"Digit {number} again", key="image_restart"):
        state["image_canvas"] = start.copy()
    event = st.plotly_chart(canvas_figure(state["image_canvas"]), key="image_canvas_chart", on_select="rerun",
                            selection_mode=("points", "box"), width="content")
    squares = sorted(event.selection.point_indices) if event and event.selection else []
    if squares and squares != state.get("image_canvas_applied"):     # a new box: paint it once
        state["image_canvas"] = painted(state["image_canvas"], squares, pen)
        state["image_canvas_applied"] = squares
        st.rerun()
    return state["image_canvas"].astype(np.float32)
