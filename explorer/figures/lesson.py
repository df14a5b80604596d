"""The Lesson's small figures: one per step, each narrow enough for a 1024-pixel projector's column at any
sentence length. Keys run down the side (a row per key, never a crowded axis across), and a long sentence shows
the keys that matter (the largest values and the chosen one), saying so in the title; the deep views show every
key. Every text is at least 12 px (projector mode scales it up, common.font)."""

from __future__ import annotations

import html
import json

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import display_tokens, font, projector_mode

MOST_KEYS = 24          # rows a figure shows at most; the rest are named in its title
PROJECTOR_KEYS = 12     # … in projector mode (rows 1.3 × as tall)
ROW = 22                # px a row (a 12 px label and its spacing)
SHOWN_DIMENSIONS = 32   # a vector's first values drawn
CHOSEN, OTHER, REST = "#d62728", "#1f77b4", "#bbbbbb"


def shown_keys(values: np.ndarray, chosen: int | None) -> np.ndarray:
    """Positions of the keys drawn, in sentence order: all when few, else the largest most_keys() (the chosen key
    always among them)."""
    most = most_keys()
    if len(values) <= most:
        return np.arange(len(values))
    order = [int(i) for i in np.argsort(-np.asarray(values))]
    picked = ([chosen] if chosen is not None else []) + [i for i in order if i != chosen]
    return np.array(sorted(picked[:most]))


def most_keys() -> int:
    """Rows a key figure shows: MOST_KEYS, or PROJECTOR_KEYS in projector mode, where its larger rows must still fit
    the class's first screen at 1024 × 768 under the step's title and paragraph (the title says which are shown)."""
    return PROJECTOR_KEYS if projector_mode() else MOST_KEYS


def labels_at(tokens: list[str], positions) -> list[str]:
    shown = display_tokens(tokens)
    return [f"{i} {shown[i]}" for i in positions]


def subtitle(text: str) -> str:
    """A second title line at 12 px (plotly's <sup> would draw it at 70%: under 11 px)."""
    return f"<br><span style='font-size:{font(12)}px'>{text}</span>"


def which(shown: int, total: int) -> str:
    return "" if shown == total else subtitle(f"{shown} of {total} keys: those with the most weight; "
                                              "“See it in depth” shows all")


def sized(figure: go.Figure, rows: int, title: str, top: int = 70, bottom: int = 40, row: int = ROW) -> go.Figure:
    """row: px a row before projector mode's scaling."""
    # The title at the top of the figure, above anything drawn in the top margin (a heatmap's key labels); its
    # further lines as plotly's subtitle, which a title anchored at its top keeps inside the figure (lines after a
    # <br> in the title's own text rise above it).
    main, _, rest = title.partition("<br>")
    figure.update_layout(title=dict(text=main, font=dict(size=font(14)), y=1.0, yanchor="top", yref="container",
                                    pad=dict(t=10), subtitle=dict(text=rest, font=dict(size=font(12)))),
                         height=top + bottom + rows * font(row),
                         margin=dict(l=10, r=10, t=top, b=bottom), font=dict(size=font(12)), showlegend=False)
    figure.update_yaxes(autorange="reversed", automargin=True, tickfont=dict(size=font(12)), type="category")
    figure.update_xaxes(tickfont=dict(size=font(12)), automargin=True)
    return figure


def key_bars(values: np.ndarray, keys: list[str], chosen: int, title: str, percent: bool = False,
             ranked_by: np.ndarray | None = None) -> go.Figure:
    """One bar per key (horizontal), the chosen key in red, each bar's value written beside it. A long sentence
    shows the keys largest in `ranked_by` (default: the values' size), so steps ranked alike show the same keys."""
    positions = shown_keys(np.abs(values) if ranked_by is None else ranked_by, chosen)
    shown = np.asarray(values)[positions]
    text = [f"{v:.1%}" if percent else f"{v:.3f}" for v in shown]
    figure = go.Figure(go.Bar(x=shown, y=labels_at(keys, positions), orientation="h", text=text,
                              textposition="outside", cliponaxis=False, textfont=dict(size=font(12)),
                              marker_color=[CHOSEN if p == chosen else OTHER for p in positions],
                              hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    low, high = float(min(shown.min(), 0)), float(max(shown.max(), 0))
    room = (high - low) * 0.25 or 1.0           # the values written outside the bars stay inside the plot
    figure.update_xaxes(range=[low - (room if low < 0 else 0), high + room],
                        tickformat=".0%" if percent else None)
    return sized(figure, len(positions), title + which(len(positions), len(keys)))


def vector_rows(rows: dict[str, np.ndarray], title: str) -> go.Figure:
    """Vectors as coloured rows (their first SHOWN_DIMENSIONS values; blue negative, red positive, hover: value)."""
    labels = [html.escape(label, quote=False) for label in rows]     # "× v of </s>": plotly reads </s> as a tag
    shown = [np.asarray(row, dtype=float)[:SHOWN_DIMENSIONS] for row in rows.values()]
    width = max(len(row) for row in shown)          # a shorter vector (d_model below heads × d_k) ends in blanks
    matrix = np.array([np.pad(row, (0, width - len(row)), constant_values=np.nan) for row in shown])
    limit = float(np.nanmax(np.abs(matrix))) or 1.0
    figure = go.Figure(go.Heatmap(z=matrix, y=labels, x=[str(d) for d in range(matrix.shape[1])],
                                  colorscale="RdBu_r", zmin=-limit, zmax=limit, xgap=1, ygap=2,
                                  colorbar=dict(thickness=12, len=1.0, tickfont=dict(size=font(12)), nticks=5,
                                                title=dict(text="value", font=dict(size=font(12)))),
                                  hovertemplate="%{y}<br>value %{x}: %{z:.4f}<extra></extra>"))
    figure.update_xaxes(title=dict(text="value number", font=dict(size=font(12))), dtick=4)
    # A few vectors get two rows' height each; many (a head's z each) one, so every head fits one screen
    return sized(figure, max(len(labels), 2) * (2 if len(labels) <= 4 else 1), title, bottom=60)


def keys_by_columns(matrix: np.ndarray, keys: list[str], columns: list[str], title: str,
                    marked: int | None = None) -> go.Figure:
    """[columns, keys] weights as a heatmap with a row per key and a column per head (or layer), each cell's
    percentage written in it."""
    positions = shown_keys(matrix.max(axis=0), None)
    values = matrix[:, positions].T
    figure = go.Figure(go.Heatmap(z=values, x=columns, y=labels_at(keys, positions), colorscale="Blues",
                                  zmin=0, zmax=1, xgap=2, ygap=2, text=[[f"{v:.0%}" for v in row] for row in values],
                                  texttemplate="%{text}", textfont=dict(size=font(12)),
                                  colorbar=dict(thickness=12, tickformat=".0%", tickfont=dict(size=font(12))),
                                  hovertemplate="%{x}, key %{y}: %{z:.1%}<extra></extra>"))
    figure.update_xaxes(side="top", type="category")
    if marked is not None:
        figure.add_shape(type="rect", xref="x", yref="paper", x0=marked - 0.5, x1=marked + 0.5, y0=0, y1=1,
                         line=dict(color=CHOSEN, width=2))
    return sized(figure, len(positions), title + which(len(positions), len(keys)), top=100)


def layers_by_key(rows: np.ndarray, keys: list[str], title: str) -> go.Figure:
    return keys_by_columns(rows, keys, [f"layer {layer}" for layer in range(len(rows))], title)


WINDOW = 21             # decoder positions the masked-attention figure shows: the start token and 20 output pieces, the
                        # lecture's whole triangle; a longer output shows the 21 ending after the chosen position
PROJECTOR_TRIANGLE_ROW = 14   # px a row of it in projector mode before scaling (18 px): the whole triangle fits the
                              # class's first screen under the step's title


def masked_window(pattern: np.ndarray, mask: np.ndarray, tokens: list[str], position: int, title: str) -> go.Figure:
    """The decoder's self-attention over a window of positions ending after the chosen one: weights as colour and
    percentages, masked cells (the future) grey and marked ✕; keys before the window summed in one first column, so
    every row still adds up to 100%."""
    end = min(len(tokens), max(position + 2, WINDOW))
    start = max(0, end - WINDOW)
    labels = labels_at(tokens, range(start, end))
    weights, allowed = pattern[start:end, start:end], mask[start:end, start:end]
    columns = labels
    if start:       # the window's rows also weigh the keys before it
        columns = [f"0–{start - 1} (before)"] + labels
        weights = np.concatenate([pattern[start:end, :start].sum(axis=1, keepdims=True), weights], axis=1)
        allowed = np.concatenate([mask[start:end, :start].any(axis=1, keepdims=True), allowed], axis=1)
    shown = np.where(allowed, weights, np.nan)
    text = [[f"{w:.0%}" if ok else "✕" for w, ok in zip(row, oks)] for row, oks in zip(weights, allowed)]
    figure = go.Figure([
        go.Heatmap(z=np.where(allowed, np.nan, 1.0), x=columns, y=labels, colorscale=[[0, "#dddddd"], [1, "#dddddd"]],
                   showscale=False, hoverinfo="skip", xgap=2, ygap=2),
        go.Heatmap(z=shown, x=columns, y=labels, colorscale="Blues", zmin=0, zmax=1, xgap=2, ygap=2, text=text,
                   texttemplate="%{text}", textfont=dict(size=font(11)),
                   colorbar=dict(thickness=12, tickformat=".0%", tickfont=dict(size=font(12))),
                   hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.1%}<extra></extra>"),
    ])
    row = position - start
    figure.add_shape(type="rect", x0=-0.5, x1=len(columns) - 0.5, y0=row - 0.5, y1=row + 0.5,
                     line=dict(color=CHOSEN, width=2))
    figure.update_xaxes(side="top", tickangle=-60, type="category", title=dict(text="key", font=dict(size=font(12))))
    figure.update_yaxes(title=dict(text="query", font=dict(size=font(12))), dtick=1)      # every row named
    part = "" if start == 0 and end == len(tokens) else subtitle(f"queries {start}–{end - 1} of {len(tokens)}")
    return sized(figure, len(labels), title + part, top=190, bottom=20,
                 row=PROJECTOR_TRIANGLE_ROW if projector_mode() else ROW)


def probability_bars(tokens: list[str], probabilities: list[float], chosen: str, title: str) -> go.Figure:
    """The top of the output distribution, a bar per piece, the chosen one in red, and a grey bar for the rest of
    the vocabulary: the bars add up to 100%, as softmax's do."""
    rest = max(0.0, 1.0 - float(sum(probabilities)))
    labels = [f"{i + 1}. {token}" for i, token in enumerate(display_tokens(tokens))] + ["the rest of the vocabulary"]
    values = list(probabilities) + [rest]
    figure = go.Figure(go.Bar(x=values, y=labels, orientation="h",
                              text=[f"{p:.1%}" if p >= 0.001 else "<0.1%" for p in values],
                              textposition="outside", cliponaxis=False, textfont=dict(size=font(12)),
                              marker_color=[CHOSEN if t == chosen else OTHER for t in tokens] + [REST],
                              hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    top = max(values) * 1.3 or 1                   # room for the values written beside the bars
    figure.update_xaxes(range=[0, top], tickformat=".0%", tickvals=[v for v in (0, 0.25, 0.5, 0.75, 1) if v <= top])
    return sized(figure, len(labels), title)


def one_hot_bars(tokens: list[str], probabilities: list[float], target: str, title: str) -> go.Figure:
    """Training's comparison: the predicted probabilities of the top pieces (and the rest) beside the one-hot
    target, 1 at the target piece and 0 elsewhere."""
    figure = probability_bars(tokens, probabilities, target, title)
    labels = list(figure.data[0].y)
    one_hot = [1.0 if token == target else 0.0 for token in tokens] + [0.0 if target in tokens else 1.0]
    figure.add_trace(go.Scatter(x=one_hot, y=labels, mode="markers", name="one-hot target",
                                marker=dict(symbol="line-ns-open", size=font(18), color="black", line=dict(width=3)),
                                hovertemplate="%{y}: target %{x:.0f}<extra></extra>"))
    figure.update_xaxes(range=[0, 1.25], tickvals=[0, 0.25, 0.5, 0.75, 1])
    figure.data[0].name = "predicted probability"
    # A value written beside a long bar would sit under the target's mark at 1 and read as struck through: inside
    figure.data[0].textposition = ["inside" if value > 0.8 else "outside" for value in figure.data[0].x]
    # The legend between the title and the bars (the room sized() leaves there), clear of the axis's numbers.
    figure.update_layout(showlegend=True, legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0,
                                                      font=dict(size=font(12))))
    return figure


def matrix_form(q: np.ndarray, k_t: np.ndarray, weights: np.ndarray, v: np.ndarray, z: np.ndarray,
                queries: list[str], keys: list[str], row: int, title: str) -> go.Figure:
    """The lecture's slide with the model's numbers: Q, Kᵀ, softmax(QKᵀ/√d_k), V and Z = weights · V side by side as
    heatmaps (hover: row, column, value), keys named under Kᵀ and the weights (V's rows in their order), the followed
    query's row outlined in Q, the weights and Z. The weights are coloured from 0 to their largest, so that a spread
    of small weights is not all white."""
    from plotly.subplots import make_subplots

    total = len(queries)
    shown = matrix_window(total, row)
    query_labels = labels_at(queries, range(total))[shown]
    key_labels = labels_at(keys, range(len(keys)))[shown]
    notes = [f"the weights coloured 0 to their largest, {float(weights[shown, shown].max()):.0%}"]
    if shown.stop - shown.start < total:          # projector mode, a long sentence: a window of positions
        q, weights, z, row = q[shown], weights[shown, shown], z[shown], row - shown.start
        k_t, v = k_t[:, shown], v[shown]
        notes.insert(0, f"positions {shown.start}–{shown.stop - 1} of {total}; Z sums over all {total} keys")
    d_k, n_keys = k_t.shape
    figure = make_subplots(rows=1, cols=5, column_widths=[d_k, n_keys, n_keys, d_k, d_k], horizontal_spacing=0.035,
                           subplot_titles=("Q", "Kᵀ", "softmax(QKᵀ/√d_k)", "V", "Z = weights · V"))
    dimensions = [str(d) for d in range(d_k)]
    panels = [(q, dimensions, query_labels, "RdBu_r", True), (k_t, key_labels, dimensions, "RdBu_r", False),
              (weights, key_labels, query_labels, "Blues", True), (v, dimensions, key_labels, "RdBu_r", False),
              (z, dimensions, query_labels, "RdBu_r", True)]
    for column, (matrix, x, y, scale, outlined) in enumerate(panels, start=1):
        limit = float(np.abs(matrix).max()) or 1.0
        figure.add_trace(go.Heatmap(z=matrix, x=x, y=y, colorscale=scale, showscale=False,
                                    zmin=0 if scale == "Blues" else -limit, zmax=limit,
                                    hovertemplate="%{y} · %{x}: %{z:.4f}<extra></extra>"), row=1, col=column)
        figure.update_xaxes(showticklabels=x is key_labels, tickangle=-60, type="category",
                            tickfont=dict(size=font(12)), row=1, col=column)
        # V's rows are the keys, in the order the weights' columns name them (labels there would cover the weights)
        figure.update_yaxes(autorange="reversed", type="category", showticklabels=column == 1, dtick=1,
                            tickfont=dict(size=font(12)), row=1, col=column)
        if outlined:            # the followed query's row: a rectangle around it
            figure.add_shape(type="rect", x0=-0.5, x1=len(x) - 0.5, y0=row - 0.5, y1=row + 0.5,
                             line=dict(color=CHOSEN, width=2), row=1, col=column)
    figure.update_annotations(font=dict(size=font(13)))
    rows = max(len(query_labels), len(key_labels), 8)
    # In projector mode rows of 20 px (16 px labels, each drawn), at most 20 of them: all under the title on one screen
    row_px = 20 if projector_mode() else font(16)
    figure.update_layout(title=dict(text=title, font=dict(size=font(14)), y=1.0, yanchor="top", yref="container",
                                    pad=dict(t=10), subtitle=dict(text="; ".join(notes), font=dict(size=font(12)))),
                         height=font(90) + rows * row_px + font(70), margin=dict(l=10, r=10, t=font(90), b=20),
                         font=dict(size=font(12)))
    return figure


MATRIX_PROJECTOR_ROWS = 20      # positions the matrix step draws at most in projector mode


def matrix_window(total: int, row: int) -> slice:
    """The positions the matrix step draws: all, or in projector mode MATRIX_PROJECTOR_ROWS consecutive ones
    around the followed row."""
    if not projector_mode() or total <= MATRIX_PROJECTOR_ROWS:
        return slice(0, total)
    start = min(max(0, row - MATRIX_PROJECTOR_ROWS // 2), total - MATRIX_PROJECTOR_ROWS)
    return slice(start, start + MATRIX_PROJECTOR_ROWS)


# -- the step's numbers and token chips, as HTML (the page shows them; each number carries its full value) --

def number_text(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:,.1f}"
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:.3f}" for v in value) + ", …]"
    return str(value)


def numbers_html(numbers) -> str:
    """A step's numbers as a wrapping row of labelled boxes. data-name and data-value hold each number's name and
    full value (JSON), so a test reads exactly what the page states."""
    boxes = "".join(
        f'<div class="lesson-number" data-name="{html.escape(number.name)}" '
        f"data-value='{html.escape(json.dumps(number.value, ensure_ascii=False), quote=True)}'>"
        f'<div class="lesson-label">{html.escape(number.label)}</div>'
        f'<div class="lesson-value">{html.escape(number_text(number.value))}</div></div>'
        for number in numbers)
    return f'<div class="lesson-numbers">{boxes}</div>'


def chips_html(tokens: list[str], marked: int | None) -> str:
    """Tokens as numbered chips that wrap to the column's width, the marked one highlighted."""
    chips = "".join(f'<span class="lesson-chip{" lesson-marked" if i == marked else ""}">'
                    f'<sub>{i}</sub> {html.escape(token)}</span>' for i, token in enumerate(tokens))
    return f'<div class="lesson-chips lesson-figure">{chips}</div>'


LESSON_CSS = """<style>
.lesson-numbers { display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0.25rem 0 0.75rem; }
.lesson-number { border: 1px solid #ccd; border-radius: 0.4rem; padding: 0.3rem 0.6rem; max-width: 100%; }
.lesson-label { font-size: 0.8rem; color: #555; overflow-wrap: anywhere; }
.lesson-value { font-family: monospace; font-size: 0.95rem; overflow-wrap: anywhere; }
.lesson-chips { display: flex; flex-wrap: wrap; gap: 0.3rem; margin-bottom: 0.75rem; }
.lesson-chip { border: 1px solid #99b; border-radius: 0.3rem; padding: 0.1rem 0.4rem; font-family: monospace;
               font-size: 0.95rem; }
.lesson-chip sub { color: #777; font-size: 0.7rem; }
.lesson-marked { background: #d62728; color: white; border-color: #d62728; }
.lesson-marked sub { color: #fdd; }
</style>"""
