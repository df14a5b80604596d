"""Figures of decoding: every step's probability and entropy, where a step looked, the beam tree, teacher forcing
of a reference, and the heads behind a masked language model's prediction. A step's top-k candidates are a ranked
list (explorer/figures/candidates.py).

Every token axis labels every token, rotated upright where they would crowd, on a figure sized from the number of
tokens (common.every_label, cell_size); a probability too small for three decimals is printed with significant
digits, never as 0.000.
"""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from explorer.capture.decoding_steps import TeacherForcing
from explorer.capture.trace import StepDistribution
from explorer.figures.common import (
    NARROW_WIDTH,
    PROJECTOR_COLUMN,
    cell_size,
    display_tokens,
    every_label,
    font,
    is_long,
    label_font,
    label_room,
    position_labels,
    projector_mode,
    projector_title,
    stretched_length,
    title_height,
    wrapped_title,
)
from explorer.figures.token_bars import ORANGE, Bars, TokenBars, probability_text
from explorer.models.decoding import BeamResult

# d3 formats of hover text: three significant digits, so a probability of 0.0004 reads 0.0004, not 0.000
PROBABILITY_HOVER, WEIGHT_HOVER = ".3g", ".3g"


def significant(value: float) -> str:
    """A value in two significant digits (0.0012, 0.25, 3.1), whole numbers from 100 on."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2g}"


# -- token axes --


TICK_ROOM = 10      # px above the plot for the upper half of the value axis's top tick ("1")


def token_bars(figure: go.Figure, labels: list[str], plot_height: int, top: int | None = None) -> go.Figure:
    """Token labels along the x axis, every one of them while a projector's column holds them (else a label every
    few, stretched_length): horizontal where they fit, upright where they would crowd (never at a slant, where
    neighbours overlap), in the font for their count; the figure is the column's width and tall enough for its
    upright labels under the bars. top: the top margin a titled() title needs; None: the figure's own title is
    broken into lines of a projector's column and measured, with a row for the legend under it (a fixed 70 px let
    the subtitle run onto the probability axis's "1" at a projector's larger type)."""
    count = len(labels)
    room = label_room(labels, count, angle=90)
    # More bars than a projector's column labels one by one (a figure of its own width was squeezed into it, its
    # upright labels 10 px apart): the column's width, a label every few bars, every one once zoomed in.
    stretched = stretched_length(count)
    figure.update_xaxes(**every_label(count, stretched, autotickangles=[0, -90]), title_font=dict(size=font(12)))
    figure.update_yaxes(tickfont=dict(size=font(12)), title_font=dict(size=font(12)))
    figure.update_layout(legend_font_size=font(12))
    note = (f"<br><sup>{count} tokens: a label every few; drag along the bars to zoom in and read every "
            "label, double-click to zoom out</sup>") if stretched else ""
    if top is None:
        title = wrapped_title((figure.layout.title.text or "") + note, NARROW_WIDTH - 20)
        legend = font(12) + 14 if len(figure.data) > 1 else 0
        top = title_height(title) + legend + TICK_ROOM
        figure.update_layout(title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=12)))
    elif note:
        title, extra = projector_title(figure.layout.title.text or "", note)
        figure.update_layout(title_text=title)
        top += extra + TICK_ROOM
    figure.update_layout(height=top + plot_height + room + 20, margin=dict(l=10, r=10, t=top, b=10))
    return figure


# A title in two sizes: the title line (plotly's 16 px here) short enough for a figure half a 1024 px window's column
# wide (~270 px), the details under it in <sup> lines (11 px), one a line, so no line runs past the figure's edge.
TITLE_PAD, TITLE_LINE = 12, 21      # px above the title; px a line of it (plotly spaces lines by the title's font)


def titled(figure: go.Figure, title: str, lines: list[str]) -> int:
    """The title over its detail lines, anchored to the top of the figure; returns the top margin they need."""
    text = "<br>".join([title] + [f"<sup>{line}</sup>" for line in lines if line])
    figure.update_layout(title=dict(text=text, y=1.0, yanchor="top", yref="container", pad=dict(t=TITLE_PAD)))
    return TITLE_PAD + TITLE_LINE * (1 + len([line for line in lines if line])) + 10


# Two figures stand side by side in half the narrowest main column (a 1024 px window's, sidebar open: 564 px); a
# bar chart's plot there has this much less than its figure for the weight axis, its ticks and the margins.
HALF_COLUMN, WEIGHT_AXIS = 270, 70


def bars_fit_half_column(count: int) -> bool:
    """Whether `count` bars keep a label's cell each (cell_size) in a figure half the narrowest column wide: past
    that, upright labels squeezed there run into each other (a 20-token sentence at 1024 px: 9.5 px apart)."""
    return not is_long(count) and count * cell_size(count) + WEIGHT_AXIS <= HALF_COLUMN


def fixed_width(figure: go.Figure) -> str:
    """How a page shows the figure (explorer.pages.components.widgets.show_figure's width): at its own width when it has one."""
    return "content" if figure.layout.width else "stretch"


def steps_described(steps: list[StepDistribution]) -> TokenBars:
    """Per step: the chosen token's probability and the distribution's entropy, under it."""
    tick, top = nats_scale([s.entropy for s in steps])
    return TokenBars(
        [step.chosen for step in steps],
        [Bars("p(chosen)", [s.chosen_prob for s in steps], 1.0, 90, written=probability_text),
         Bars("entropy (nats)", [s.entropy for s in steps], top, 55, ORANGE, "{:.2f}".format, tick)],
        "Every step: probability of the chosen token, and entropy",
        "a column a step: the token written, the probability the model gave it (blue, 0–1) and how spread its "
        f"choice was (orange, entropy 0–{top:g} nats); hover a step for its numbers", "decoding-steps")


def attention_row_described(weights: np.ndarray, keys: list[str], title: str, details: list[str] = ()) -> TokenBars:
    """One query's weights over the keys, a bar per key; details: lines under the title."""
    return TokenBars(keys, [Bars("weight", [float(w) for w in weights], 1.0, 90)], title, " · ".join(details),
                     "step-attention", tuple(details))


ROW_GAP = 30        # px between two rows of bars in the plotly chart


def plotly_bars(described: TokenBars) -> go.Figure:
    """The bars as a plotly chart, drawn as the page's HTML draws them: a row of bars a Bars, one over the other on
    the same tokens, each on its axis from 0 to its top, in its colour; hover names the token and the value."""
    labels = position_labels(described.labels)
    heights = [max(2 * bars.height, 100) for bars in described.rows]
    plot = sum(heights) + ROW_GAP * (len(heights) - 1)
    figure = go.Figure()
    upper = 1.0
    for index, (bars, height) in enumerate(zip(described.rows, heights)):
        suffix = "" if index == 0 else str(index + 1)
        figure.add_trace(go.Bar(x=labels, y=list(bars.values), name=bars.name, marker_color=bars.colour,
                                yaxis=f"y{suffix}", customdata=[bars.written(float(v)) for v in bars.values],
                                hovertemplate=f"%{{x}}<br>{html.escape(bars.name)} %{{customdata}}<extra></extra>"))
        ticks = dict(tickmode="linear", tick0=0, dtick=bars.tick, tickformat="~g") if bars.tick else {}
        figure.layout[f"yaxis{suffix}"] = dict(domain=[max(0.0, upper - height / plot), upper], range=[0, bars.top],
                                               title=html.escape(bars.name), anchor="x", **ticks)
        upper -= (height + ROW_GAP) / plot
    figure.update_layout(showlegend=False, xaxis=dict(anchor=f"y{len(heights) if len(heights) > 1 else ''}"))
    if described.details:
        return token_bars(figure, labels, plot, top=titled(figure, described.title, list(described.details)))
    figure.update_layout(title=described.title)
    return token_bars(figure, labels, plot)


ENTROPY_STEPS = (0.5, 1.0, 2.0, 5.0)      # nats between ticks: round values, the smallest giving at most 7 ticks


def nats_scale(values) -> tuple[float, float]:
    """(step, top) of a scale in nats from 0 over `values` (entropy, KL): round ticks, the top the first tick at or
    over the largest finite value."""
    finite = [float(v) for v in values if math.isfinite(v)]
    highest = max(finite, default=0.0)
    step = next((step for step in ENTROPY_STEPS if highest / step <= 6), ENTROPY_STEPS[-1])
    return step, max(step, math.ceil(highest / step) * step)


def teacher_forcing_figure(forced: TeacherForcing) -> go.Figure:
    labels = position_labels(forced.tokens)
    figure = go.Figure(go.Bar(x=labels, y=forced.probabilities, customdata=forced.ranks,
                              marker_color=["#1f77b4" if r == 1 else "darkorange" for r in forced.ranks],
                              hovertemplate=f"%{{x}}<br>p = %{{y:{PROBABILITY_HOVER}}}<br>rank %{{customdata}}"
                                            "<extra></extra>"))
    figure.update_layout(title=f"Reference tokens under the model: loss {forced.loss:.3f} nats/token, "
                               f"perplexity {forced.perplexity:.2f}<br><sup>orange: not the model's first choice"
                               "</sup>",
                         yaxis=dict(range=[0, 1], title="probability"))
    return token_bars(figure, labels, 240)


# -- the beam tree --

BEAM_MARKER = 8            # px, a beam's dot
BEAM_ROW = 30              # px a step: a line of labels and a band under it where the links run
BEAM_ROOM = 880            # px the ranks share on a wide page (a 1400 px window's main column holds ~940)
CHAR_WIDTH = 0.62          # a character's width in em, generously (common.label_room's measure)
TEXT_OFFSET = 14           # px from a dot's centre to its label's start
COLUMN_GAP = 16            # px between a label's end and the next rank's dot
AXIS_ROOM = 60             # px left of the first rank: step numbers and the axis title


def beam_font(beam: int) -> int:
    """The labels' px: 11 (10 past a beam of 5, so ten ranks keep a few characters each), scaled up in projector
    mode."""
    return font(11 if beam <= 5 else 10)


def beam_room() -> int:
    """Px the ranks share: a 1400 px window's main column, or in projector mode the folded sidebar's column less
    the step axis (the tree is drawn at its own width, so it must fit)."""
    return PROJECTOR_COLUMN - AXIS_ROOM - 10 if projector_mode() else BEAM_ROOM


def label_chars(beam: int, size: int) -> int:
    """The most characters a beam-tree label keeps (its last one an ellipsis when cut): what fits in a rank's
    share of the page at this font size, 5 to 24 (ten ranks keep "▁Hun…" at a projector)."""
    share = beam_room() / max(beam, 1)
    return int(np.clip((share - TEXT_OFFSET - COLUMN_GAP) // (CHAR_WIDTH * size), 5, 24))


def cut(piece: str, chars: int) -> str:
    """A piece cut to `chars` characters, the last an ellipsis ("▁Schwimmb…")."""
    return piece if len(piece) <= chars else piece[: chars - 1] + "…"


def beam_paths(result: BeamResult) -> list[list[tuple[int, ...]]]:
    """Per step, each live beam's tokens so far (following its parents), to find a hypothesis in the tree."""
    paths: list[list[tuple[int, ...]]] = []
    previous: list[tuple[int, ...]] = [()]
    for step in result.steps:
        previous = [previous[parent] + (token,) for token, parent in zip(step.tokens, step.parents)]
        paths.append(previous)
    return paths


def beam_tree_figure(result: BeamResult, pieces) -> go.Figure:
    """The live beams of every step, each linked to the beam it extends: steps run down the page (a row each),
    ranks across, each rank a column wide enough for its labels at the font chosen for the beam size, so labels
    never run into the next column (a long piece is cut with "…"; hover shows it whole). The links run in the band
    between two rows, never through a label; the best finished hypothesis is drawn in red.

    pieces: a function from token ids to piece strings (the tokenizer's).
    """
    beam = max([len(step.tokens) for step in result.steps], default=1)
    size = beam_font(beam)
    chars = label_chars(beam, size)
    row = font(BEAM_ROW)
    best = tuple(result.best.tokens)
    # The root is the decoder's start, named as such: its token (<s>, <pad>…) is no step's choice.
    xs, ys, labels, hovers, on_best = [0], [0], ["start"], ["the decoder's start: every beam extends it"], [True]
    edges_x, edges_y, best_x, best_y = [], [], [], []
    longest = 3
    # Of a row (a share: the same in projector mode, where rows and labels grow), between its labels' middle and the
    # band where links cross.
    clear = 9 / BEAM_ROW
    for step_index, (step, paths) in enumerate(zip(result.steps, beam_paths(result)), start=1):
        whole = pieces(step.tokens)
        for rank, (piece, parent, log_prob, path) in enumerate(zip(whole, step.parents, step.log_probs, paths)):
            label = cut(piece, chars)
            longest = max(longest, len(label))
            xs.append(rank), ys.append(step_index), labels.append(display_tokens([label])[0])
            hovers.append(f"step {step_index}, rank {rank}: {display_tokens([piece])[0]}<br>"
                          f"cumulative log-prob {log_prob:.3f}<br>extends rank {parent} of step {step_index - 1}")
            on_best.append(path == best[: len(path)])
            # down from the parent's dot, across the band under its row, down into this dot: never over a label
            link_x = [parent, parent, rank, rank, None]
            link_y = [step_index - 1, step_index - 1 + clear, step_index - clear, step_index, None]
            if on_best[-1]:
                best_x += link_x
                best_y += link_y
            else:
                edges_x += link_x
                edges_y += link_y
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=edges_x, y=edges_y, mode="lines", line=dict(color="#c8c8c8", width=1),
                                hoverinfo="skip"))
    figure.add_trace(go.Scatter(x=best_x, y=best_y, mode="lines", line=dict(color="crimson", width=2),
                                hoverinfo="skip"))
    figure.add_trace(go.Scatter(x=xs, y=ys, mode="markers+text", text=labels, textposition="middle right",
                                hovertext=hovers, hoverinfo="text",
                                marker=dict(size=BEAM_MARKER, color=["crimson" if b else "#1f77b4" for b in on_best]),
                                textfont=dict(size=size, color="#222222", shadow="auto")))
    steps = len(result.steps)
    column = TEXT_OFFSET + math.ceil(CHAR_WIDTH * size * longest) + COLUMN_GAP
    plot_width = max(column * beam, 520)
    column = plot_width / beam
    lead = (BEAM_MARKER + 4) / column            # room left of the first dot, in ranks
    width = plot_width + AXIS_ROOM + 10
    # Plotly never wraps a title and cuts it at the figure's edge: broken into lines of the figure's width, the
    # plot moved down by them, with room for the rank numbers and "rank" above the first row.
    title = wrapped_title("Beam search: the live beams of every step, rank 0 (best) on the left"
                          "<br><sup>red: the best finished hypothesis; hover a token for its whole text and "
                          "cumulative log-probability</sup>", width - 20)
    top = title_height(title) + 2 * font(12) + 24
    figure.update_layout(title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=12)),
                         showlegend=False, plot_bgcolor="white", width=width,
                         height=top + row * (steps + 1) + 10, margin=dict(l=AXIS_ROOM, r=10, t=top, b=10))
    figure.update_xaxes(side="top", tickmode="array", tickvals=list(range(beam)), range=[-lead, beam - lead],
                        tickfont=dict(size=font(12)), title=dict(text="rank", standoff=4, font=dict(size=font(12))),
                        zeroline=False, showgrid=False)
    figure.update_yaxes(title=dict(text="step", font=dict(size=font(12))), tickmode="linear", tick0=0, dtick=1,
                        tickfont=dict(size=label_font(steps + 1)),
                        range=[steps + 0.5, -0.5], zeroline=False, showgrid=False)
    return figure


# -- a masked language model's heads --

def head_effect_figure(effect: np.ndarray, title: str) -> go.Figure:
    """|∂ log p / ∂ gate| of every head [layers, heads], each cell's value printed in two significant digits
    (0.0012, not 0.00) while the cells are wide enough for it."""
    layers, heads = effect.shape
    columns, rows = [f"head {h}" for h in range(heads)], [f"layer {layer}" for layer in range(layers)]
    text = [[significant(float(v)) for v in row] for row in effect]
    figure = go.Figure(go.Heatmap(z=effect, x=columns, y=rows, text=text, colorscale="Blues", zmin=0,
                                  texttemplate="%{text}" if heads <= 16 else None, textfont=dict(size=11),
                                  colorbar=dict(title="|gradient|", thickness=12, tickformat=".2~g"),
                                  hovertemplate="%{y}, %{x}<br>|gradient| %{text}<extra></extra>"))
    figure.update_xaxes(**every_label(heads, side="top"))
    figure.update_yaxes(**every_label(layers, autorange="reversed"))
    figure.update_layout(title=title, height=110 + 34 * layers, margin=dict(l=10, r=10, t=80, b=10))
    return figure
