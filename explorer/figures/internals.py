"""Figures of the machinery: masks, scores → softmax, positional encodings, the Q/K/V arithmetic."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.internals import Walkthrough
from explorer.figures.common import (ABSOLUTE, cell_size, display_tokens, every_label, label_room, panels_per_row,
                                     position_labels, scale_note, token_axes, weight_range)

NEG_INF_LABEL = "−∞"
TEXT_CELLS = 10      # print values in the cells up to this many tokens a side


def _cells(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(z with −inf as NaN, which plotly leaves blank; text with −inf written out)."""
    finite = np.isfinite(values)
    text = np.where(finite, np.vectorize(lambda v: f"{v:.2f}")(np.where(finite, values, 0)), NEG_INF_LABEL)
    return np.where(finite, values, np.nan), text


def matrix_heatmap(values: np.ndarray, rows: list[str], columns: list[str], title: str = "", value_name: str = "value",
                   row_title: str = "query", column_title: str = "key", diverging: bool = True,
                   show_text: bool = False) -> go.Figure:
    """Any [rows, columns] matrix of numbers; rows and columns labelled by (raw) tokens or names."""
    rows, columns = position_labels(rows), position_labels(columns)
    z, text = _cells(values)
    figure = go.Figure(go.Heatmap(
        z=z, x=columns, y=rows, text=text, texttemplate="%{text}" if show_text else None,
        colorscale="RdBu_r" if diverging else "Blues", zmid=0 if diverging else None,
        hovertemplate=f"{row_title} %{{y}}<br>{column_title} %{{x}}<br>{value_name} %{{text}}<extra></extra>",
    ))
    figure.update_layout(title=title, margin=dict(l=10, r=10, t=60, b=10))
    token_axes(figure, row_title, column_title)
    return figure


NEAR_OFFSETS = 32


def relative_bias_figure(offsets: np.ndarray, values: np.ndarray, title: str) -> go.Figure:
    """Each head's bias [heads, offsets] along a numeric offset axis (key − query; negative = to the left)."""
    heads = [f"head {h}" for h in range(values.shape[0])]
    figure = go.Figure(go.Heatmap(z=values, x=offsets, y=heads, colorscale="RdBu_r", zmid=0,
                                  colorbar=dict(title="bias", thickness=14),
                                  hovertemplate="%{y}<br>offset %{x}<br>bias %{z:.3f}<extra></extra>"))
    figure.update_layout(title=title, height=max(260, 34 * len(heads) + 150), margin=dict(l=10, r=10, t=60, b=10))
    # Near offsets are where the buckets differ (exact there, logarithmic beyond): shown first; zoom out for all.
    near = NEAR_OFFSETS
    figure.update_xaxes(title="offset of the key from the query (key − query); zoom out for all offsets",
                        zeroline=False, range=[max(int(offsets.min()), -near) - 0.5, min(int(offsets.max()), near) + 0.5])
    figure.update_yaxes(autorange="reversed")
    return figure


def mask_heatmap(mask: np.ndarray, rows: list[str], columns: list[str], title: str = "", row_title: str = "query",
                 column_title: str = "key", row_pieces: list[list[str]] | None = None) -> go.Figure:
    """A yes/no mask in two colours with a two-entry key (not a continuous 0–1 scale).

    row_pieces: for a batch of sentences, each row's own pieces: the columns are then numbered positions, and
    each cell names its own sentence's piece (printed while they fit, else on hover)."""
    allowed = mask.astype(bool)
    state = np.where(allowed, "may attend (1)", "blocked (0)")
    if row_pieces is not None:
        columns = [str(i) for i in range(mask.shape[1])]
        pieces = np.array([[display_tokens([p])[0] for p in row] for row in row_pieces], dtype=object)
        text, printed = pieces, mask.shape[1] <= 12      # wider, the pieces run into each other: on hover
        hover = f"{row_title} %{{y}}<br>position %{{x}}: %{{text}}<br>%{{customdata}}<extra></extra>"
        rows = [f"{name}" for name in rows]
    else:
        rows, columns = position_labels(rows), position_labels(columns)
        text, printed = state, False
        hover = f"{row_title} %{{y}}<br>{column_title} %{{x}}<br>%{{customdata}}<extra></extra>"
    figure = go.Figure(go.Heatmap(
        z=allowed.astype(float), x=columns, y=rows, zmin=0, zmax=1, xgap=1, ygap=1,
        colorscale=[[0, "#3b3b3b"], [0.5, "#3b3b3b"], [0.5, "#9ecae1"], [1, "#9ecae1"]],
        text=text, customdata=state, texttemplate="%{text}" if printed else None, textfont=dict(size=10),
        colorbar=dict(tickvals=[0.25, 0.75], ticktext=["blocked (0)", "may attend (1)"], thickness=14, len=0.5),
        hovertemplate=hover))
    figure.update_layout(title=title, margin=dict(l=10, r=10, t=60, b=10))
    token_axes(figure, row_title, column_title)
    return figure


def scores_mask_softmax(scores: np.ndarray, mask: np.ndarray, pattern: np.ndarray, queries: list[str],
                        keys: list[str], title: str = "", scale: str = ABSOLUTE) -> go.Figure:
    """Scaled scores + mask (0 or −∞) = masked scores → softmax, four panels side by side while their cells fit
    (panels_per_row), else two or one a row; every token labelled. One colour bar for the scores (the first and
    third panels share it), one for the weights.

    Each cell's value is printed only while the cells are big enough to read it (≤ TEXT_CELLS tokens);
    beyond that the colours carry the picture and hover gives the numbers.
    """
    n_queries, n_keys = len(queries), len(keys)
    legible = max(n_queries, n_keys) <= TEXT_CELLS
    additive = np.where(mask, 0.0, -np.inf)
    masked = np.where(mask, scores, -np.inf)
    panels = [("scaled scores", scores, "coloraxis"), ("+ mask", additive, None),
              ("= masked scores", masked, "coloraxis"), ("softmax → attention", pattern, "coloraxis2")]
    per_row = panels_per_row(max(n_queries, n_keys), len(panels))
    grid_rows = (len(panels) + per_row - 1) // per_row
    rows, columns = position_labels(queries), position_labels(keys)
    key_room = label_room(columns, n_keys)
    panel_height = cell_size(n_queries) * n_queries
    height = grid_rows * (panel_height + key_room + 40) + 90
    figure = make_subplots(rows=grid_rows, cols=per_row, subplot_titles=[name for name, _, _ in panels],
                           horizontal_spacing=0.03, vertical_spacing=(key_room + 50) / height)
    for index, (name, values, axis) in enumerate(panels):
        row, column = index // per_row + 1, index % per_row + 1
        z, text = _cells(values)
        if axis is None:
            z = np.where(mask, 1.0, 0.0)  # draw allowed / blocked; the text says 0 or −∞
        figure.add_trace(go.Heatmap(z=z, x=columns, y=rows, text=text, texttemplate="%{text}" if legible else None,
                                    textfont=dict(size=9), coloraxis=axis,
                                    **({} if axis else dict(zmin=0, zmax=1, colorscale="Greys_r", showscale=False)),
                                    hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{name}: %{{text}}<extra></extra>"),
                         row=row, col=column)
        figure.update_yaxes(**every_label(n_queries, autorange="reversed", showticklabels=column == 1),
                            row=row, col=column)
    figure.update_xaxes(**every_label(n_keys, side="top", tickangle=-60))
    finite = scores[np.isfinite(scores)]
    limit = float(np.abs(finite).max()) if finite.size else 1.0
    low, high = weight_range(pattern, scale)
    bar = dict(thickness=12, len=min(0.45, 300 / height), x=1.01, xanchor="left")
    figure.update_layout(coloraxis=dict(colorscale="RdBu_r", cmid=0, cmin=-limit, cmax=limit,
                                        colorbar=dict(title="score", y=1, yanchor="top", **bar)),
                         coloraxis2=dict(colorscale="Blues", cmin=low, cmax=high,
                                         colorbar=dict(title=scale_note(pattern, scale), y=0, yanchor="bottom",
                                                       **bar)))
    for annotation in figure.layout.annotations:        # panel titles above their key labels
        annotation.update(yshift=key_room)
    note = "" if legible else "<br><sup>values on hover (too many tokens to print them in the cells)</sup>"
    figure.add_annotation(text="mask: white = may attend (+0), black = blocked (−∞)", xref="paper", yref="paper",
                          x=0, y=1.0, yanchor="bottom", xanchor="left", yshift=key_room + 22, showarrow=False,
                          font=dict(size=11))
    figure.update_layout(title=dict(text=title + note, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
                         height=height, margin=dict(l=10, r=10, t=70 + key_room + 20, b=10))
    return figure


def positional_encoding_figure(halves: np.ndarray, tokens: list[str], title: str = "",
                               interleaved: bool = True) -> go.Figure:
    """PE for the sentence's positions, columns as [sin dims | cos dims] (positional.sin_cos_halves).
    interleaved: the model's own layout was sin, cos, sin, … (ours) rather than halves (Marian)."""
    half = halves.shape[1] // 2
    if interleaved:
        dims = [f"sin {2 * i}" for i in range(half)] + [f"cos {2 * i + 1}" for i in range(half)]
        axis = f"dimension: sin (even, 0…{2 * half - 2}) | cos (odd, 1…{2 * half - 1})"
    else:
        dims = [f"sin {i}" for i in range(half)] + [f"cos {half + i}" for i in range(half)]
        axis = f"dimension: sin (0…{half - 1}) | cos ({half}…{2 * half - 1})"
    rows = position_labels(tokens)
    figure = go.Figure(go.Heatmap(z=halves, x=dims, y=rows, colorscale="RdBu_r", zmid=0, zmin=-1, zmax=1,
                                  hovertemplate="position %{y}<br>%{x}<br>PE %{z:.3f}<extra></extra>"))
    figure.add_vline(x=half - 0.5, line=dict(color="black", width=2))
    figure.update_layout(title=title, height=max(300, cell_size(len(rows)) * len(rows) + 140),
                         margin=dict(l=10, r=10, t=60, b=10))
    figure.update_xaxes(title=axis, showticklabels=False, type="category")
    figure.update_yaxes(**every_label(len(rows), autorange="reversed", title="position"))
    return figure


def learned_positions_figure(table: np.ndarray, tokens: list[str], title: str = "") -> go.Figure:
    """A learned position-embedding table, one row per position of the sentence."""
    rows = position_labels(tokens)
    limit = float(np.abs(table).max()) or 1.0
    figure = go.Figure(go.Heatmap(z=table, y=rows, colorscale="RdBu_r", zmid=0, zmin=-limit, zmax=limit,
                                  hovertemplate="position %{y}<br>dimension %{x}<br>%{z:.3f}<extra></extra>"))
    figure.update_layout(title=title, height=max(300, cell_size(len(rows)) * len(rows) + 140),
                         margin=dict(l=10, r=10, t=60, b=10))
    figure.update_xaxes(title=f"dimension (0…{table.shape[1] - 1})")
    figure.update_yaxes(**every_label(len(rows), autorange="reversed", title="position"))
    return figure


def embedding_sum_figure(embedding: np.ndarray, positional: np.ndarray, total: np.ndarray, tokens: list[str],
                         title: str = "", titles: tuple[str, str, str] = ("token embedding × √d_model",
                                                                          "+ positional encoding", "= input to layer 0")
                         ) -> go.Figure:
    """token embedding × √d_model + positional encoding = the encoder's input, as the model sums them
    (titles: the panels' names, for models that combine them otherwise)."""
    figure = make_subplots(rows=1, cols=3, horizontal_spacing=0.03, subplot_titles=list(titles))
    rows = position_labels(tokens)
    limit = float(np.abs(total).max())
    for column, values in enumerate((embedding, positional, total), start=1):
        figure.add_trace(go.Heatmap(z=values, y=rows, colorscale="RdBu_r", zmid=0, zmin=-limit, zmax=limit,
                                    showscale=column == 3, hovertemplate="%{y}<br>dimension %{x}<br>%{z:.3f}<extra></extra>"),
                         row=1, col=column)
        figure.update_yaxes(**every_label(len(rows), showticklabels=column == 1, autorange="reversed"), row=1, col=column)
    figure.update_layout(title=title, height=max(300, cell_size(len(rows)) * len(rows) + 160),
                         margin=dict(l=10, r=10, t=90, b=10))
    return figure


def scaling_words(scaling: float, d_k: int) -> str:
    """The model's scaling of q·k in words: "÷ √d_k (√64 = 8)", or the factor itself when it is something else."""
    if np.isclose(scaling, d_k ** -0.5):
        return f"÷ √d_k (√{d_k} = {np.sqrt(d_k):.3g})"
    if np.isclose(scaling, 1.0):
        return "not divided by √d_k"
    return f"× {scaling:.4g} (the model's own scaling)"


def walkthrough_figure(walk: Walkthrough, keys: list[str], query: str, d_k: int) -> go.Figure:
    """q·k, its scaling and softmax for every key, as bars: the arithmetic behind one row of attention."""
    labels = position_labels(keys)
    figure = make_subplots(rows=1, cols=3, subplot_titles=["q · k", scaling_words(walk.scaling, d_k)
                                                         + (" + position bias" if walk.biased else ""), "softmax"],
                           horizontal_spacing=0.06)
    allowed = np.isfinite(walk.masked)
    for column, values in enumerate((walk.dots, walk.masked, walk.weights), start=1):
        shown = np.where(np.isfinite(values), values, 0.0)
        text = [f"{v:.3f}" if ok else NEG_INF_LABEL for v, ok in zip(values, np.isfinite(values))]
        figure.add_trace(go.Bar(x=shown, y=labels, orientation="h", text=text, textposition="auto",
                                marker_color=np.where(allowed, "#1f77b4", "#bbbbbb"),
                                hovertemplate="key %{y}<br>%{text}<extra></extra>"), row=1, col=column)
        figure.update_yaxes(**every_label(len(labels), showticklabels=column == 1, autorange="reversed"),
                            row=1, col=column)
    figure.update_layout(title=f"query {html_safe(query)}: scores over the keys", showlegend=False,
                         height=max(300, cell_size(len(labels)) * len(labels) + 140),
                         margin=dict(l=10, r=10, t=80, b=10))
    return figure


def html_safe(text: str) -> str:
    return display_tokens([text])[0]
