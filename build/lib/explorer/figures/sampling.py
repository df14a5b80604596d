"""One step of a sample: its distribution under the sampling settings, beside the model's own: a pair of bars per
token (its most probable ones that can be drawn), grey for the model at T = 1, blue for what a token is drawn from
with this temperature, top-k and top-p (filtered and renormalised); ▶ marks the token the sample drew. Redrawn on
every change of a setting, from log-probabilities computed once per sample (explorer/capture/sampling.py)."""

from __future__ import annotations

import math
import textwrap

import plotly.graph_objects as go

from explorer.capture.sampling import StepSampling
from explorer.figures.common import display_tokens, every_label, font
from explorer.figures.decoding import PROBABILITY_HOVER, titled

MODEL_COLOUR, SAMPLED_COLOUR = "#b0b0b0", "#1f77b4"
VALUE_SIZE, VALUE_COLOUR = 11, "#333333"     # the bars' values: readable beside an axis label
DETAIL_CHARACTERS = 70      # a title's detail line (11 px) at most: the figure is ~560 px wide in a 1024 px window
LEGEND_ROOM = 24            # px between the title and the bars, where the legend sits


SMALLEST = 1e-5        # a bar's value below this reads "< 0.00001" (two digits of 1e-9 would be 12 characters)


def two_digits(p: float) -> str:
    """Every bar's value in one format: two significant digits, written out, their trailing zero kept (0.50,
    0.0010, 0.00098, 1.0); 0 for a token the settings filter out."""
    if p == 0:
        return "0"
    if p < SMALLEST:
        return f"< {SMALLEST:.5f}"
    decimals = max(0, 1 - math.floor(math.log10(float(f"{p:.2g}"))))
    return f"{p:.{decimals}f}"


def settings_text(step: StepSampling) -> str:
    settings = step.settings
    if settings.greedy:
        return "T = 0 (greedy)"
    parts = [f"T = {settings.temperature:g}"]
    if settings.top_k:
        parts.append(f"top-k {settings.top_k}")
    if settings.top_p < 1:
        parts.append(f"top-p {settings.top_p:g}")
    return ", ".join(parts)


def sampling_figure(step: StepSampling, index: int) -> go.Figure:
    """The step's SHOWN most probable tokens that can be drawn (the model's order), both distributions; ▶ the
    token the sample drew at this step (step.drawn_id)."""
    labels = [f"{'▶ ' if token_id == step.drawn_id else ''}{token}"
              for token_id, token in zip(step.ids, display_tokens(step.tokens))]
    figure = go.Figure([
        go.Bar(x=step.model_probs, y=labels, orientation="h", name="model (T = 1)", marker_color=MODEL_COLOUR,
               hovertemplate=f"%{{y}}<br>model: p = %{{x:{PROBABILITY_HOVER}}}<extra></extra>"),
        go.Bar(x=step.sampled_probs, y=labels, orientation="h", name="sampled from", marker_color=SAMPLED_COLOUR,
               text=[two_digits(p) for p in step.sampled_probs], textposition="outside", cliponaxis=False,
               textfont=dict(size=font(VALUE_SIZE), color=VALUE_COLOUR), constraintext="none",
               hovertemplate=f"%{{y}}<br>sampled from: p = %{{x:{PROBABILITY_HOVER}}}<extra></extra>"),
    ])
    kept = "1 token" if step.kept == 1 else f"{step.kept:,} tokens"
    # One fact a line: on one line they ran past the figure's right edge in a 1024 px window.
    details = [f"{kept} can be drawn, holding {step.kept_mass:.1%} of the model's probability",
               f"entropy {step.entropy:.2f} nats; ▶ the token the sample drew"]
    if step.never_drawn:
        details += textwrap.wrap(f"never drawn, so not listed: {', '.join(display_tokens(step.never_drawn))}",
                                 DETAIL_CHARACTERS, break_long_words=False)
    top = titled(figure, f"step {index} under {settings_text(step)}", details) + LEGEND_ROOM
    figure.update_layout(
        barmode="group", bargap=0.25, bargroupgap=0.05, height=top + 16 + 34 * len(labels),
        margin=dict(l=10, r=50, t=top, b=10), xaxis=dict(range=[0, 1.08], title="probability"),
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right"))
    figure.update_yaxes(**every_label(len(labels), autorange="reversed"))
    return figure
