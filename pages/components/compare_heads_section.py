"""The Compare page's heads of the chosen layer, the models side by side: the focus token followed through every
head of every model (a table, explorer/figures/focus_strips.py), then a short sentence's every head of every model
drawn whole with every label, or a longer one's small tiles of every head's whole pattern beside the table."""

from __future__ import annotations

import streamlit as st

from explorer.figures.attention import layer_heads
from explorer.figures.common import (
    CONTENT_WIDTH,
    NARROW_WIDTH,
    PANEL_LABELS,
    PROJECTOR_COLUMN,
    cell_size,
    display_tokens,
    is_long,
    panels_per_row,
    plural,
    projector_mode,
)
from explorer.figures.focus import models_overview
from explorer.figures.focus_strips import strips_table
from explorer.figures.thumbnails import Tile, thumbnail_grid
from explorer.models.vocabulary import KIND_TITLES, Kind, Side
from explorer.pages.components.widgets import show_figure, show_table_figure

PER_ROW = 4         # tiles a row: the 8-head model in two rows beside the strips at 1400 px


def every_head_tiles(patterns: dict, title: str, scale: str, focus_row: int | None, focus_column: int | None) -> str:
    """Every head of every model as tiles (explorer/figures/thumbnails.py), PER_ROW a row, each model from a new
    row named on the left, in a projector's column (NARROW_WIDTH with the sidebar open, PROJECTOR_COLUMN in
    projector mode, where it is folded)."""
    rows = []
    for name, pattern in patterns.items():
        tiles = [Tile(pattern[head], f"head {head}", f"{name} · head {head}") for head in range(len(pattern))]
        rows += [(name if start == 0 else "", tiles[start:start + PER_ROW]) for start in range(0, len(tiles), PER_ROW)]
    return thumbnail_grid(rows, title, "whole patterns; hover names the head, ⬇ HTML each cell's tokens", scale,
                          focus_row, focus_column, "every-head-of-every-model",
                          PROJECTOR_COLUMN if projector_mode() else NARROW_WIDTH)


def show_heads_side_by_side(models: dict, traces: dict, labels: list[str], kind: str, layer: int, shown: str, scale: str,
                            focus: int | None, tokens: list) -> None:
    """The heads of the chosen kind and layer in every model; `tokens`: each model's source tokens, `focus`: the
    source token followed (None when the models split the sentence differently)."""
    names = [models[label].name for label in labels]          # short names, unless two models share one
    short = {label: name if names.count(name) == 1 else label for name, label in zip(names, labels)}
    kind = Kind(kind)         # a link's text, or the radio's Kind
    having = [label for label in labels if kind in traces[label].attention]      # an encoder-only model: no cross
    focus_token = tokens[0][focus] if focus is not None else ""
    token = display_tokens([focus_token])[0]                    # escaped, for the plotly download's title

    def shown_layer(label: str) -> int:
        return min(layer, models[label].layers(kind) - 1)        # a model with fewer layers: its last

    def draw(label: str, width: int) -> None:
        """One model's heads of the chosen layer, as many a row as fit `width` px with every token labelled."""
        trace, model = traces[label], models[label]
        if kind not in trace.attention:
            st.caption(f"{label} has no {KIND_TITLES[kind].lower()}.")
            return
        pattern = trace.attention[kind].value(shown)[shown_layer(label)]
        queries, keys = trace.query_tokens(kind), trace.key_tokens(kind)
        heads = "" if "head" in label else f": {plural(model.heads, 'head')}"     # bundled labels say it already
        show_figure(layer_heads(pattern, queries, keys, f"{label}{heads}, {kind} layer {shown_layer(label)}",
                                focus_row=focus if kind.query_side is Side.SOURCE else None,
                                focus_column=focus if kind.reads_the_source else None,
                                per_row=panels_per_row(max(len(queries), len(keys)), model.heads, width),
                                scale=scale),
                    f"compare-{model.name}-{kind}-L{shown_layer(label)}", {shown: pattern}, width="content")

    def focus_token_strips() -> None:
        """The focus token in every head of every model, the models side by side with every token labelled at any
        length (a table, explorer/figures/focus_strips.py): in encoder self-attention its row (what it attends to),
        in cross-attention its column (which of each model's output tokens attend to it)."""
        if kind.query_side is Side.SOURCE:
            strips = {short[label]: traces[label].attention[kind].value(shown)[shown_layer(label), :, focus] for label in having}
            rows = {short[label]: traces[label].key_tokens(kind) for label in having}
            title, direction = f"What “{focus_token}” attends to, encoder layer {layer}", "from"
        else:
            strips = {short[label]: traces[label].attention[kind].value(shown)[shown_layer(label), :, :, focus]
                      for label in having}
            rows = {short[label]: traces[label].query_tokens(kind) for label in having}
            title, direction = f"Which output tokens attend to “{focus_token}”, cross-attention layer {layer}", "to"
        show_table_figure(strips_table(strips, rows, title, "one column per head; a model with fewer layers shows its "
                                       "last layer; hover a cell for its weight", focus_token, direction, scale),
                          f"compare-focus-{kind}", strips, width="content")

    def every_head_overview() -> None:
        """Every head of every model as whole patterns, small tiles without token labels, in a projector's column."""
        if not having:
            return
        patterns = {short[label]: traces[label].attention[kind].value(shown)[shown_layer(label)] for label in having}
        focus_row = focus if kind.query_side is Side.SOURCE else None
        focus_column = focus if kind.reads_the_source else None
        title = f"Every head of every model, {kind} layer {layer}"
        outlined = focus is not None and kind.reads_the_source
        queries = {short[label]: traces[label].query_tokens(kind) for label in having}
        keys = {short[label]: traces[label].key_tokens(kind) for label in having}
        show_table_figure(every_head_tiles(patterns, title + (f"; outlined: “{focus_token}”" if outlined else ""),
                                           scale, focus_row, focus_column),
                          f"compare-{kind}-L{layer}-every-head", patterns, width="content",
                          interactive=lambda: models_overview(      # a plotly title: the token escaped
                              patterns, queries, keys, title + (f"; outlined: “{token}”" if outlined else ""),
                              focus_row=focus_row, focus_column=focus_column, scale=scale))

    # A short sentence: every head of every model drawn whole with every token labelled (while one head's panel of
    # each model fits its share of the wide page's width at the sizing rule's cells). Longer, three models' labelled
    # panels no longer fit side by side (at 45 words they made an 11-heatmap, 13,500 px page, too wide for a
    # projector's column): the models compare side by side on the focus token's row or column, every token labelled,
    # with every head's whole pattern as small tiles under it (their ⬇ HTML's hover names the tokens; the NPZ has
    # every number).
    longest = max(max(len(traces[label].query_tokens(kind)), len(traces[label].key_tokens(kind)))
                  for label in having) if having else 0
    share = CONTENT_WIDTH // len(labels)
    if not is_long(longest) and cell_size(longest) * longest + 12 + PANEL_LABELS <= share:
        if focus is not None and kind.query_side is Side.SOURCE:
            # The focus token in every head of every model, one table: the models compare at a glance (the panels
            # below give each head's whole pattern).
            focus_token_strips()
        # Each model's heads as many a row as fit a projector's column, the models side by side where the page is
        # wide enough and one under the other where not: a figure is never squeezed into a third of 1024 px.
        models_row = st.container(horizontal=True)
        for label in labels:
            with models_row.container(width="content"):
                draw(label, NARROW_WIDTH)
    elif focus is not None and kind.reads_the_source and having:
        pair = st.container(horizontal=True)      # side by side in a wide column, one under the other at 1024 px
        with pair.container(width="content"):
            focus_token_strips()
        with pair.container(width="content"):
            every_head_overview()
    else:
        st.caption("Decoder self-attention works on each model's own output, so no token is shared to follow across the "
                   "models (encoder self-attention and cross-attention follow the focus token): below, every head's "
                   "whole pattern; hover names the head, ⬇ HTML each cell's tokens." if not kind.reads_the_source else
                   "No token is shared to follow across these models: below, every head's whole pattern; hover names "
                   "the head, ⬇ HTML each cell's tokens.")
        every_head_overview()
