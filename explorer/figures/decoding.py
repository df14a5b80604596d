"""Figures of decoding: each step's top-k, the beam tree, and teacher forcing of a reference."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.decoding_steps import TeacherForcing
from explorer.figures.common import display_tokens, position_labels
from explorer.trace import StepDistribution
from models.decoding import BeamResult


def step_figure(step: StepDistribution, index: int, what: str = "step") -> go.Figure:
    """The top-k next-token probabilities of one step (or of a masked position), the chosen token in red."""
    tokens = display_tokens(step.top_tokens)
    colours = ["crimson" if token_id == step.chosen_id else "#1f77b4" for token_id in step.top_ids]
    figure = go.Figure(go.Bar(x=step.top_probs, y=tokens, orientation="h", marker_color=colours,
                              text=[f"{p:.3f}" for p in step.top_probs], textposition="auto",
                              hovertemplate="%{y}<br>p = %{x:.4f}<extra></extra>"))
    verb = "hid" if what == "masked" else "chose"
    figure.update_layout(title=f"{what} {index}: {verb} {display_tokens([step.chosen])[0]} "
                               f"(p = {step.chosen_prob:.3f}, entropy {step.entropy:.2f} nats)",
                         height=60 + 28 * len(tokens), margin=dict(l=10, r=10, t=50, b=10), xaxis=dict(range=[0, 1]))
    figure.update_yaxes(autorange="reversed", type="category")
    return figure


def steps_overview(steps: list[StepDistribution]) -> go.Figure:
    """Per step: the chosen token's probability and the distribution's entropy."""
    labels = position_labels([s.chosen for s in steps])
    figure = go.Figure([
        go.Bar(x=labels, y=[s.chosen_prob for s in steps], name="p(chosen)", hovertemplate="%{x}<br>p = %{y:.3f}<extra></extra>"),
        go.Scatter(x=labels, y=[s.entropy for s in steps], name="entropy (nats)", yaxis="y2", mode="lines+markers",
                   hovertemplate="%{x}<br>entropy %{y:.2f}<extra></extra>"),
    ])
    figure.update_layout(title="Every step: probability of the chosen token, and entropy", height=340,
                         yaxis=dict(title="probability", range=[0, 1]),
                         yaxis2=dict(title="entropy (nats)", overlaying="y", side="right", rangemode="tozero"),
                         margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=1.12))
    figure.update_xaxes(type="category", tickangle=-45)
    return figure


def attention_row_figure(weights: np.ndarray, keys: list[str], title: str) -> go.Figure:
    labels = position_labels(keys)
    figure = go.Figure(go.Bar(x=labels, y=weights, hovertemplate="%{x}<br>weight %{y:.3f}<extra></extra>"))
    figure.update_layout(title=title, height=300, yaxis=dict(range=[0, 1], title="weight"),
                         margin=dict(l=10, r=10, t=50, b=10))
    figure.update_xaxes(type="category", tickangle=-45)
    return figure


def beam_tree_figure(result: BeamResult, pieces) -> go.Figure:
    """The live beams of every step, each linked to the beam it extends: steps run down the page (one row
    each, so a 30-word sentence stays readable), beam ranks across, token labels written horizontally.

    pieces: a function from token ids to piece strings (the tokenizer's).
    """
    figure = go.Figure()
    xs, ys, labels, hovers = [0], [0], ["<s>"], ["start"]
    previous = [(0, 0)]
    edge_x, edge_y = [], []
    beam = 1
    for step_index, step in enumerate(result.steps, start=1):
        tokens = display_tokens(pieces(step.tokens))
        beam = max(beam, len(tokens))
        positions = []
        for rank, (token, parent, log_prob) in enumerate(zip(tokens, step.parents, step.log_probs)):
            px, py = previous[parent]
            edge_x += [px, rank, None]
            edge_y += [py, step_index, None]
            xs.append(rank), ys.append(step_index), labels.append(token)
            hovers.append(f"step {step_index}, rank {rank}: {token}<br>cumulative log-prob {log_prob:.3f}")
            positions.append((rank, step_index))
        previous = positions
    figure.add_trace(go.Scatter(x=edge_x, y=edge_y, mode="lines", line=dict(color="#bbbbbb"), hoverinfo="skip"))
    figure.add_trace(go.Scatter(x=xs, y=ys, mode="markers+text", text=labels, textposition="middle right",
                                hovertext=hovers, hoverinfo="text", marker=dict(size=8, color="#1f77b4"),
                                textfont=dict(size=11)))
    steps = len(result.steps)
    figure.update_layout(title="Beam search: live beams per step, ranks 0 (best) to the right "
                               "(hover for cumulative log-probability)",
                         showlegend=False, height=140 + 26 * (steps + 1), margin=dict(l=10, r=10, t=80, b=10))
    figure.update_xaxes(side="top", dtick=1, range=[-0.3, beam - 0.2], zeroline=False)
    figure.update_yaxes(title="step", dtick=1, range=[steps + 0.5, -0.5], zeroline=False)
    return figure


def teacher_forcing_figure(forced: TeacherForcing) -> go.Figure:
    labels = position_labels(forced.tokens)
    figure = go.Figure(go.Bar(x=labels, y=forced.probabilities, customdata=forced.ranks,
                              marker_color=["#1f77b4" if r == 1 else "darkorange" for r in forced.ranks],
                              hovertemplate="%{x}<br>p = %{y:.4f}<br>rank %{customdata}<extra></extra>"))
    figure.update_layout(title=f"Reference tokens under the model: loss {forced.loss:.3f} nats/token, "
                               f"perplexity {forced.perplexity:.2f} (orange: not the model's first choice)",
                         height=340, yaxis=dict(range=[0, 1], title="probability"), margin=dict(l=10, r=10, t=50, b=10))
    figure.update_xaxes(type="category", tickangle=-45)
    return figure
