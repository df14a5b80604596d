"""The live induction-head demonstration's figure (explorer/analyses/lecture/induction_demo.py): the second-repeat loss and the
induction (prefix-matching) score over training steps, in two panels on one step axis, the phase change shaded."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.figures.common import font

LOSS_COLOUR, SCORE_COLOUR, PREVIOUS_COLOUR, CHANCE_COLOUR = "#d62728", "#1f77b4", "#9467bd", "#7f7f7f"


def induction_demo_figure(result: dict) -> go.Figure:
    """Top: the loss on the second repeat (uniform guessing's loss dashed). Bottom: the best last-layer head's
    prefix-matching score and the best first-layer head's previous-token score (uniform attention's prefix
    matching dashed). The phase change (10% → 90% of the score's rise) shaded in both, its midpoint a line."""
    steps = result["steps"]
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                           subplot_titles=("Loss on the second repeat", "Head scores"))
    figure.add_trace(go.Scatter(x=steps, y=result["loss"], name="second-repeat loss", line=dict(color=LOSS_COLOUR),
                                hovertemplate="step %{x}<br>loss %{y:.3f}<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Scatter(x=steps, y=result["induction_score"], name="induction score (layer 2, best head)",
                                line=dict(color=SCORE_COLOUR),
                                hovertemplate="step %{x}<br>prefix matching %{y:.3f}<extra></extra>"), row=2, col=1)
    figure.add_trace(go.Scatter(x=steps, y=result["previous_token_score"], name="previous-token score (layer 1)",
                                line=dict(color=PREVIOUS_COLOUR, width=1.5),
                                hovertemplate="step %{x}<br>previous token %{y:.3f}<extra></extra>"), row=2, col=1)
    for row, value, label in ((1, result["chance"]["loss"], "uniform guess"),
                              (2, result["chance"]["induction_score"], "chance")):
        figure.add_hline(y=value, line=dict(color=CHANCE_COLOUR, dash="dash", width=1), row=row, col=1,
                         annotation_text=f"{label} {value:.3g}", annotation_position="top right",
                         annotation_font=dict(size=font(12), color=CHANCE_COLOUR))
    change = result.get("phase_change")
    if change:
        for row in (1, 2):
            figure.add_vrect(x0=change["onset_step"], x1=change["end_step"], fillcolor="#ffdd57", opacity=0.3,
                             line_width=0, row=row, col=1)
            figure.add_vline(x=change["step"], line=dict(color="black", width=1), row=row, col=1)
        # Left of the shaded change, halfway down the loss panel: before the change the loss stays near uniform
        # guessing (the panel's top), so that corner is empty; at the top right it ran into the "uniform guess" label.
        figure.add_annotation(x=change["onset_step"], y=0.45, xref="x", yref="y domain", xanchor="right",
                              yanchor="middle", xshift=-4, showarrow=False,
                              text=f"phase change, step {change['step']}", font=dict(size=font(12)))
    figure.update_yaxes(title_text="cross-entropy (nats)", rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title_text="score", range=[0, 1.02], row=2, col=1)
    figure.update_xaxes(title_text="training step", row=2, col=1)
    figure.update_layout(height=560, margin=dict(t=60, l=70, r=20, b=50),
                         legend=dict(orientation="h", yanchor="top", y=-0.12, x=0))
    return figure
