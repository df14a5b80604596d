"""Widgets every page uses: a figure with its downloads (a plotly figure's SVG from the camera button; HTML, CSV or
NPZ for a plotly figure and a table figure alike) and the attention kind / layer / head pickers."""

from __future__ import annotations

import streamlit as st

from explorer.capture.exports import arrays_npz, table_csv
from explorer.figures.common import ABSOLUTE, figure_html
from explorer.figures.html_cells import standalone_page
from explorer.models.vocabulary import ATTENTION_KINDS, KIND_TITLES
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import linked, term_help


def figure_config(figure, name: str) -> dict:
    """The camera button saves an SVG (vector, for papers) at the figure's own size, rendered by the browser."""
    height = figure.layout.height or 450
    return {"displaylogo": False, "toImageButtonOptions": {"format": "svg", "filename": name, "height": height,
                                                           "width": figure.layout.width or max(900, int(height * 1.6)),
                                                           "scale": 1}}


def figure_places(count: int, fits: bool = True) -> list:
    """Places for `count` figures: columns side by side where they fit, else one under another; always one under
    another in projector mode (a class reads one figure at a time, each at full width)."""
    if fits and not st.session_state.get("projector"):
        return list(st.columns(count))
    return [st.container() for _ in range(count)]


def colour_scale() -> str:
    """The attention colour scale chosen in the sidebar (explorer.figures.common.COLOUR_SCALES)."""
    return st.session_state.get("colour_scale", ABSOLUTE)


def show_figure(figure, name: str, numbers=None, width: str = "stretch") -> None:
    """A plotly figure with its downloads beside it: HTML (plotly.js inlined, works offline) and CSV or NPZ.
    width "content": the figure's own width (its cells keep their size; the page scrolls), else the column's."""
    st.plotly_chart(figure, key=f"chart_{name}", config=figure_config(figure, name), width=width)
    downloads(name, lambda: figure_html(figure, figure_config(figure, name)), numbers)


def show_table_figure(body: str, name: str, numbers=None, width: str = "stretch", interactive=None) -> None:
    """A figure drawn as an HTML table (explorer/figures/html_cells.py) with the same downloads as a plotly one:
    the table as a page of its own, and its numbers as CSV or NPZ. interactive: a function giving the plotly
    version (hover names every cell), whose page the ⬇ HTML downloads instead; called only on a click."""
    st.html(body, width=width)
    def plotly_page() -> str:
        figure = interactive()
        return figure_html(figure, figure_config(figure, name))

    downloads(name, plotly_page if interactive else (lambda: standalone_page(body, name)), numbers)


def downloads(name: str, page, numbers=None) -> None:
    """A figure's download buttons: its HTML `page` (a function, called only on a click) and its numbers."""
    # A row that wraps: in a narrow column (Compare's 1-head panel) the buttons go under each other, never cut.
    row = st.container(horizontal=True)
    row.download_button("⬇ HTML", data=page, file_name=f"{name}.html", mime="text/html", key=f"html_{name}")
    if hasattr(numbers, "to_csv"):   # a table
        row.download_button("⬇ CSV", data=lambda: table_csv(numbers), file_name=f"{name}.csv",
                            mime="text/csv", key=f"csv_{name}")
    elif numbers is not None:
        row.download_button("⬇ NPZ", data=lambda: arrays_npz(numbers), file_name=f"{name}.npz",
                            mime="application/octet-stream", key=f"npz_{name}")


COMMAND_LINE = "For researchers: the command line"


def command_line(text: str, where=st) -> None:
    """A command-line hint (`python -m explorer …`), folded away: a student reads the page's own words first."""
    with where.expander(COMMAND_LINE):
        st.caption(text)


ATTENTION_VALUES = {"pattern": "weights α", "norm": "norms ‖α·f(x)‖ (Kobayashi et al. 2020)"}


def attention_values(key: str, where=st) -> str:
    """Weights, or Kobayashi et al.'s norms ‖α·f(x)‖ (explorer/capture/value_norms.py): "pattern" or "norm", the trace's own
    names; shared by the pages through the URL's `values=`."""
    url_state.kept(key, "values", list(ATTENTION_VALUES))
    shown = where.radio("Show", list(ATTENTION_VALUES), format_func=ATTENTION_VALUES.get, key=key, horizontal=True,
                        help="Kobayashi et al. 2020, “Attention is not only a weight”: what a head adds to query i "
                             "from key j is α_ij · f(x_j), f(x_j) = v_j W_O (the head's slice, no bias); its length "
                             "shows how much key j moves the query. A high weight on a key with a short f(x) moves "
                             f"it little. ({linked('norm-based attention', 'glossary')})")
    url_state.keep("values", shown)
    return shown


def choose_head(checkpoint, prefix: str, first_kind: str = "encoder", kinds=ATTENTION_KINDS,
                pick_head: bool = True) -> tuple[str, int, int]:
    """Kind, layer and head pickers in one row. The pages that look at one head share it (the head chosen on
    Attention is the one Internals opens) through the URL's `head=kind.layer.head`; each page's pickers (key
    prefix) start from it whenever Streamlit has forgotten them. kinds: those the model has. pick_head False:
    the kind picker alone, for a view of the whole kind (a mask), the layer and head kept as they were."""
    kinds = sorted(kinds, key=lambda kind: kind != first_kind)
    keys = [f"{prefix}_kind", f"{prefix}_layer", f"{prefix}_head"]
    url_state.bind("head", *keys)
    chosen = url_state.saved("head").split(".")
    saved = (len(chosen) == 3 and chosen[0] in kinds and chosen[1].isdigit()
             and int(chosen[1]) < checkpoint.layers(chosen[0]) and chosen[2].isdigit()
             and int(chosen[2]) < checkpoint.heads)
    drawn = keys if pick_head else keys[:1]
    if saved and any(key not in st.session_state for key in drawn):
        for key, value in zip(keys, (chosen[0], int(chosen[1]), int(chosen[2]))):
            st.session_state[key] = value
    left, middle, right = st.columns([2, 1, 1]) if pick_head else (st.container(), None, None)
    url_state.valid(keys[0], kinds)
    kind = left.radio("Attention", kinds, format_func=KIND_TITLES.get, key=keys[0], horizontal=True,
                      help=term_help("self-attention", "cross-attention"))
    if pick_head:
        url_state.valid(keys[1], range(checkpoint.layers(kind)))
        layer = middle.selectbox("Layer", range(checkpoint.layers(kind)), key=keys[1], help=term_help("layer"))
        url_state.valid(keys[2], range(checkpoint.heads))
        head = right.selectbox("Head", range(checkpoint.heads), key=keys[2], help=term_help("head"))
    else:               # not drawn here: as last chosen (kept in the URL), within this kind's layers
        layer = min(int(chosen[1]) if saved else 0, checkpoint.layers(kind) - 1)
        head = int(chosen[2]) if saved else 0
    url_state.keep("head", f"{kind}.{layer}.{head}")
    return kind, layer, head


def one_tab_at_a_time(parts: dict, key: str, parameter: str) -> None:
    """Tabs of which only the open one runs and is drawn (name → its drawing function), the open one kept in the
    URL as `parameter=`: a page of several heavy views then costs one view's time on every rerun."""
    url_state.kept(key, parameter, list(parts))
    tabs = st.tabs(list(parts), key=key, on_change="rerun")
    url_state.keep(parameter, st.session_state.get(key) or next(iter(parts)))
    for tab, draw in zip(tabs, parts.values()):
        if tab.open:
            with tab:
                draw()
