"""Widgets every page uses: a figure with its downloads (SVG from the camera button, HTML, CSV or NPZ) and the
attention kind / layer / head pickers."""

from __future__ import annotations

import streamlit as st

from explorer.exports import arrays_npz, table_csv
from explorer.figures.common import ABSOLUTE, figure_html
from models.vocabulary import ATTENTION_KINDS, KIND_TITLES
from pages import url_state


def figure_config(figure, name: str) -> dict:
    """The camera button saves an SVG (vector, for papers) at the figure's own size, rendered by the browser."""
    height = figure.layout.height or 450
    return {"displaylogo": False, "toImageButtonOptions": {"format": "svg", "filename": name, "height": height,
                                                           "width": figure.layout.width or max(900, int(height * 1.6)),
                                                           "scale": 1}}


def colour_scale() -> str:
    """The attention colour scale chosen in the sidebar (explorer.figures.common.COLOUR_SCALES)."""
    return st.session_state.get("colour_scale", ABSOLUTE)


def show_figure(figure, name: str, numbers=None, width: str = "stretch") -> None:
    """A plotly figure with its downloads beside it: HTML (plotly.js inlined, works offline) and CSV or NPZ.
    width "content": the figure's own width (its cells keep their size; the page scrolls), else the column's."""
    st.plotly_chart(figure, key=f"chart_{name}", config=figure_config(figure, name), width=width)
    # A row that wraps: in a narrow column (Compare's 1-head panel) the buttons go under each other, never cut.
    row = st.container(horizontal=True)
    row.download_button("⬇ HTML", data=lambda: figure_html(figure), file_name=f"{name}.html",
                        mime="text/html", key=f"html_{name}")
    if hasattr(numbers, "to_csv"):   # a table
        row.download_button("⬇ CSV", data=lambda: table_csv(numbers), file_name=f"{name}.csv",
                            mime="text/csv", key=f"csv_{name}")
    elif numbers is not None:
        row.download_button("⬇ NPZ", data=lambda: arrays_npz(numbers), file_name=f"{name}.npz",
                            mime="application/octet-stream", key=f"npz_{name}")


def ray_settings(prefix: str) -> tuple[int, str]:
    """Where a long recompute runs: this process (1 worker), N local worker processes, or a Ray cluster."""
    left, right = st.columns([1, 3])
    workers = left.number_input("Workers", 1, 256, 1, key=f"{prefix}_workers", persist_state="session",
                                help="More than 1 splits the corpus over worker processes on Ray (a local Ray "
                                     "starts when no address is given).")
    address = right.text_input("Ray cluster address (optional)", key=f"{prefix}_ray_address", persist_state="session",
                               placeholder="HOST:6379, as `ray start --head` prints",
                               help="The model's folder must be readable at the same path on the cluster's nodes.")
    return int(workers), address.strip()


def choose_head(checkpoint, prefix: str, first_kind: str = "encoder", kinds=ATTENTION_KINDS) -> tuple[str, int, int]:
    """Kind, layer and head pickers in one row. The pages that look at one head share it (the head chosen on
    Attention is the one Internals opens) through the URL's `head=kind.layer.head`; each page's pickers (key
    prefix) start from it whenever Streamlit has forgotten them. kinds: those the model has."""
    kinds = sorted(kinds, key=lambda kind: kind != first_kind)
    keys = [f"{prefix}_kind", f"{prefix}_layer", f"{prefix}_head"]
    chosen = url_state.saved("head").split(".")
    if (any(key not in st.session_state for key in keys) and len(chosen) == 3 and chosen[0] in kinds
            and chosen[1].isdigit() and int(chosen[1]) < checkpoint.layers(chosen[0])
            and chosen[2].isdigit() and int(chosen[2]) < checkpoint.heads):
        for key, value in zip(keys, (chosen[0], int(chosen[1]), int(chosen[2]))):
            st.session_state[key] = value
    left, middle, right = st.columns([2, 1, 1])
    url_state.valid(keys[0], kinds)
    kind = left.radio("Attention", kinds, format_func=KIND_TITLES.get, key=keys[0], horizontal=True)
    url_state.valid(keys[1], range(checkpoint.layers(kind)))
    layer = middle.selectbox("Layer", range(checkpoint.layers(kind)), key=keys[1])
    url_state.valid(keys[2], range(checkpoint.heads))
    head = right.selectbox("Head", range(checkpoint.heads), key=keys[2])
    url_state.keep("head", f"{kind}.{layer}.{head}")
    return kind, layer, head
