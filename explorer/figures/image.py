"""Figures of an image model's trace (a Vision Transformer), drawn on the image's own 2-D grid, not on a line of
tokens: where one token (the class token, or a patch) looks, over the picture; the same for every layer and head;
rollout over the patches; the position table's similarity, patch by patch (Dosovitskiy et al. 2021, figure 7);
and the class probabilities.

A patch's weight colours its square of pixels; the digit's outline lies over it in white, so a student sees
which strokes a head reads. Token 0 is the class token; token 1 + row × columns + column is that patch.
"""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.analyses.sentence.positional import position_similarity
from explorer.analyses.sentence.rollout import attention_rollout
from explorer.capture.trace import Trace
from explorer.figures.common import ABSOLUTE, SMALLEST_FONT, font

PAPER_AND_INK = [[0.0, "#f2f2f2"], [1.0, "#000000"]]    # blank paper light grey, so the image's edge shows
INK_LEVEL = 0.4         # the digit's outline: where its ink reaches this (0 paper, 1 full ink)
WEIGHTS = "Viridis"
PANEL = 300             # px a side of one image panel
SMALL_PANEL = 110       # px a side of a panel among layers × heads


def grid_of(trace: Trace) -> tuple[int, int]:
    """(rows, columns) of patches, read from the patch labels r{row}c{column}."""
    places = [tuple(map(int, found.groups())) for found in
              (re.fullmatch(r"r(\d+)c(\d+)", token) for token in trace.source_tokens) if found]
    return max(r for r, _ in places) + 1, max(c for _, c in places) + 1


def token_name(trace: Trace, token: int) -> str:
    """ "the class token", or "patch r1c2" (row 1, column 2, counted from 0 at the top left)."""
    return "the class token" if token == 0 else f"patch {trace.source_tokens[token]}"


def on_pixels(weights: np.ndarray, grid: tuple[int, int], image: np.ndarray) -> np.ndarray:
    """Patch weights [patches] (row by row) spread over each patch's square of pixels: [height, width]."""
    rows, columns = grid
    size = image.shape[0] // rows
    return np.kron(weights.reshape(rows, columns), np.ones((size, size)))


def image_traces(weights: np.ndarray, trace: Trace, top: float, show_scale: bool, hover: str,
                 outline: float = 2.5, colour_title: str = "weight") -> list:
    """The weights over the picture, and the digit's outline over them."""
    grid = grid_of(trace)
    spread = on_pixels(weights, grid, trace.image)
    rows, columns = grid
    size = trace.image.shape[0] // rows
    labels = np.array([[trace.source_tokens[1 + (y // size) * columns + x // size] for x in range(trace.image.shape[1])]
                       for y in range(trace.image.shape[0])])
    colour_bar = dict(title=dict(text=colour_title, side="right"), thickness=12, tickfont=dict(size=font(SMALLEST_FONT)))
    return [go.Heatmap(z=spread.tolist(), colorscale=WEIGHTS, zmin=0, zmax=top, showscale=show_scale, colorbar=colour_bar,
                       customdata=labels.tolist(), hovertemplate=f"patch %{{customdata}}<br>{hover} %{{z:.3f}}<extra></extra>"),
            go.Contour(z=trace.image.tolist(), contours=dict(coloring="none", start=INK_LEVEL, end=INK_LEVEL, size=1),
                       line=dict(color="white", width=outline), showscale=False, hoverinfo="skip")]


def square_axes(figure: go.Figure, **where) -> None:
    figure.update_xaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, constrain="domain", **where)
    figure.update_yaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, autorange="reversed",
                        scaleanchor="x" if not where else None, **where)


def mark_patch(figure: go.Figure, trace: Trace, token: int, colour: str = "white", **where) -> None:
    """A frame round the query patch (the class token has no place on the image): white over the weights' colours,
    red over the bare digit."""
    if token == 0:
        return
    rows, columns = grid_of(trace)
    size = trace.image.shape[0] // rows
    row, column = divmod(token - 1, columns)
    figure.add_shape(type="rect", x0=column * size - 0.5, x1=(column + 1) * size - 0.5, y0=row * size - 0.5,
                     y1=(row + 1) * size - 0.5, line=dict(color=colour, width=3), **where)


def top_of(weights: np.ndarray, scale: str) -> float:
    """The colour scale's top: 1 (absolute, figures compare), or the figure's own largest weight."""
    return 1.0 if scale == ABSOLUTE else float(weights.max()) or 1.0


def attention_over_image(trace: Trace, layer: int, head: int, query: int = 0, scale: str = ABSOLUTE) -> go.Figure:
    """Where one token looks in one head, over the picture; the title says what goes to the class token."""
    row = trace.pattern("encoder")[layer, head, query]
    figure = go.Figure(image_traces(row[1:], trace, top_of(row[1:], scale), True, "weight"))
    square_axes(figure)
    mark_patch(figure, trace, query)
    kept = "stays on the class token itself" if query == 0 else "goes to the class token (not drawn)"
    title = (f"Layer {layer}, head {head}: where {token_name(trace, query)} looks"
             f"<br><sup>{row[0]:.0%} {kept};</sup><br><sup>the other {1 - row[0]:.0%} is coloured over the "
             "patches</sup>")          # two short lines: one ran past the figure's edge at a projector's size
    figure.update_layout(title=dict(text=title, font=dict(size=font(17))), width=PANEL + 170,
                         height=PANEL + 130, margin=dict(l=10, r=10, t=font(100), b=10))
    return figure


def heads_over_image(trace: Trace, query: int = 0, scale: str = ABSOLUTE) -> go.Figure:
    """One token's attention over the picture in every layer (rows) and head (columns): colours 0–1, or each panel
    0–its own largest weight."""
    pattern = trace.pattern("encoder")
    layers, heads = pattern.shape[:2]
    figure = make_subplots(layers, heads, horizontal_spacing=0.02, vertical_spacing=0.04,
                           row_titles=[f"layer {layer}" for layer in range(layers)],
                           column_titles=[f"head {head}" for head in range(heads)])
    for layer in range(layers):
        for head in range(heads):
            row = pattern[layer, head, query]
            for part in image_traces(row[1:], trace, top_of(row[1:], scale), False, f"L{layer} H{head} weight",
                                     outline=1.5):
                figure.add_trace(part, row=layer + 1, col=head + 1)
            square_axes(figure, row=layer + 1, col=head + 1)
            mark_patch(figure, trace, query, row=layer + 1, col=head + 1)
    figure.update_annotations(font=dict(size=font(13)))
    colours = "colours 0–1 in every panel" if scale == ABSOLUTE else "each panel coloured 0–its own largest weight"
    figure.update_layout(title=dict(text=f"Where {token_name(trace, query)} looks<br><sup>every layer and head, "
                                         f"{colours}</sup>", font=dict(size=font(17)), y=0.98),
                         width=heads * SMALL_PANEL + 90, height=layers * SMALL_PANEL + 130,
                         margin=dict(l=10, r=40, t=110, b=10), showlegend=False)
    return figure


def rollout_over_image(trace: Trace, live: np.ndarray | None = None) -> go.Figure:
    """Attention rollout (Abnar & Zuidema 2020) from the class token to the patches, after the last layer."""
    flow = attention_rollout(trace.pattern("encoder"), live)[-1, 0]
    figure = go.Figure(image_traces(flow[1:], trace, float(flow[1:].max()) or 1.0, True, "rollout",
                                    colour_title="share reaching [CLS]"))
    square_axes(figure)
    figure.update_layout(title=dict(text=f"Rollout: what reaches the class token through every layer"
                                         f"<br><sup>{flow[0]:.0%} is the class token's own; the rest from the "
                                         "patches</sup>", font=dict(size=font(17))),
                         width=PANEL + 170, height=PANEL + 110, margin=dict(l=10, r=10, t=80, b=10))
    return figure


def position_similarity_grid(trace: Trace) -> go.Figure:
    """For each patch (its panel, placed where the patch is), the cosine similarity of its learned position to
    every patch's: a model that learned the 2-D layout shows a bright spot at the patch and its row and column."""
    grid = grid_of(trace)
    rows, columns = grid
    table = trace.positional["source"][1:]                  # the patches' rows, without the class token's
    similarity = position_similarity(table, cosine=True)
    figure = make_subplots(rows, columns, horizontal_spacing=0.04, vertical_spacing=0.04)
    for patch in range(rows * columns):
        row, column = divmod(patch, columns)
        labels = np.array(trace.source_tokens[1:]).reshape(rows, columns)
        figure.add_trace(go.Heatmap(z=similarity[patch].reshape(rows, columns).tolist(), zmin=-1, zmax=1, colorscale="RdBu_r",
                                    showscale=patch == 0, customdata=labels.tolist(),
                                    colorbar=dict(title=dict(text="cosine", side="right"), thickness=12,
                                                  tickfont=dict(size=font(SMALLEST_FONT))),
                                    hovertemplate=f"{trace.source_tokens[1 + patch]} with %{{customdata}}: "
                                                  "%{z:.2f}<extra></extra>"),
                         row=row + 1, col=column + 1)
        square_axes(figure, row=row + 1, col=column + 1)
    side = max(SMALL_PANEL - 20, 70)
    figure.update_layout(title=dict(text="Position embedding similarity<br><sup>each panel is one patch, placed "
                                         "where it is</sup>", font=dict(size=font(17))),
                         width=columns * side + 120, height=rows * side + 90, margin=dict(l=10, r=10, t=70, b=10))
    return figure


def class_probabilities(trace: Trace, label: str | None = None) -> go.Figure:
    """Every class's probability (the class token's softmax), the chosen one in blue; the image's own label, when
    known, outlined in orange, and the title says whether the model got it right."""
    step = trace.steps[0]
    order = sorted(range(len(step.top_tokens)), key=lambda i: step.top_tokens[i])
    names = [step.top_tokens[i] for i in order]
    values = [step.top_probs[i] for i in order]
    colours = ["#1f77b4" if name == step.chosen else "#b0b0b0" for name in names]
    outline = [3 if name == label else 0 for name in names]
    figure = go.Figure(go.Bar(x=names, y=values, marker=dict(color=colours, line=dict(color="#ff7f0e", width=outline)),
                              text=[f"{v:.0%}" for v in values], textposition="outside",
                              hovertemplate="class %{x}: %{y:.3f}<extra></extra>"))
    verdict = "" if label is None else f"; labelled {label} " + ("✓" if label == step.chosen else "✗ (orange)")
    figure.update_layout(title=dict(text=f"Class probabilities: {step.chosen} ({step.chosen_prob:.0%}){verdict}",
                                    font=dict(size=font(17))),
                         yaxis=dict(range=[0, 1.15], tickformat=".0%", title="probability"),
                         xaxis=dict(type="category", title="class", tickfont=dict(size=font(13))),
                         height=300, margin=dict(l=10, r=10, t=50, b=10))
    return figure


def digit_figure(image: np.ndarray, title: str) -> go.Figure:
    """The picture itself, ink dark on white paper."""
    figure = go.Figure(go.Heatmap(z=np.asarray(image).tolist(), colorscale=PAPER_AND_INK, zmin=0, zmax=1, showscale=False,
                                  hovertemplate="row %{y}, column %{x}: %{z:.2f}<extra></extra>"))
    square_axes(figure)
    # a narrow column's title: "held-out image no. 10" over "a 2"
    figure.update_layout(title=dict(text=title.replace(", ", "<br>", 1), font=dict(size=font(15))), height=PANEL,
                         margin=dict(l=10, r=10, t=70, b=10))
    return figure


def canvas_figure(pixels: np.ndarray) -> go.Figure:
    """The drawing canvas: one square a pixel, ink dark on light-grey paper, painted by box-selecting squares on
    the page (plotly's box selection, which Streamlit returns; a plain click only hovers)."""
    height, width = pixels.shape
    rows, columns = np.divmod(np.arange(height * width), width)
    figure = go.Figure(go.Scatter(
        x=columns.tolist(), y=rows.tolist(), mode="markers",
        marker=dict(symbol="square", size=27, color=pixels.ravel().tolist(), colorscale=PAPER_AND_INK, cmin=0, cmax=1,
                    line=dict(color="#bbbbbb", width=1)),
        hovertemplate="row %{y}, column %{x}<extra></extra>"))
    figure.update_xaxes(range=[-0.6, width - 0.4], showticklabels=False, showgrid=False, zeroline=False, fixedrange=True)
    figure.update_yaxes(range=[height - 0.4, -0.6], showticklabels=False, showgrid=False, zeroline=False,
                        fixedrange=True, scaleanchor="x")
    figure.update_layout(title=dict(text="Drag a box over squares<br>(a small box for one)", font=dict(size=font(15))),
                         width=300, height=340, margin=dict(l=10, r=10, t=70, b=10), dragmode="select",
                         clickmode="event+select")
    return figure

