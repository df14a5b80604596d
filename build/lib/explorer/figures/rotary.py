"""Rotary positions (RoPE; Su et al. 2021), as the Internals page draws them for a model that has them: the angle by
which each layer turns each pair of q and k dimensions at each position."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import axis_length, every_label, is_long, position_labels, zoom_note


def rotary_angles_figure(angles: np.ndarray, frequencies: tuple[float, ...], tokens: list[str],
                         title: str = "") -> go.Figure:
    """Rotary angles [positions, pairs] (positional.rotary_angles) as a position × pair heatmap, drawn mod 2π on a
    cyclic colour scale since a full turn is no turn at all (the hover gives the full angle and the pair's θ). Never
    pooled: a block mean of angles means nothing, and positions × pairs stays far under the cells budget."""
    positions, pairs = angles.shape
    turns = np.stack([angles, np.broadcast_to(np.asarray(frequencies, dtype=float), angles.shape)], axis=-1)
    figure = go.Figure(go.Heatmap(
        z=np.mod(angles, 2 * np.pi), x=[f"pair {i}" for i in range(pairs)], y=position_labels(tokens),
        customdata=turns, colorscale="Twilight", zmin=0, zmax=2 * np.pi,
        colorbar=dict(title="angle", thickness=14, tickvals=[0, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi],
                      ticktext=["0", "π/2", "π", "3π/2", "2π"]),
        hovertemplate="position %{y}<br>%{x}: θ = %{customdata[1]:.4g} rad a position<br>angle p·θ = "
                      "%{customdata[0]:.3f} rad (%{z:.2f} after whole turns)<extra></extra>"))
    # The usual zoom note, on two lines: this figure is as narrow as its few pairs, and one line ran past its edge.
    note = zoom_note(positions).replace(" to zoom in", "<br>to zoom in") if is_long(positions) else ""
    figure.update_layout(title=title + note, height=max(300, axis_length(positions) + 220),
                         margin=dict(l=10, r=10, t=100 if note else 60, b=110))
    # The pairs' axis under the cells: at the top its labels ran into the title and its subtitle.
    figure.update_xaxes(**every_label(pairs, side="bottom", tickangle=0 if pairs <= 16 else -60,
                                      title=f"pair of q/k dimensions: fastest (θ = {frequencies[0]:.3g}) to slowest "
                                            f"(θ = {frequencies[-1]:.3g})"))
    figure.update_yaxes(**every_label(positions, autorange="reversed", title="position"))
    return figure
