"""A sentence encoder's output drawn: the embedding's numbers as bars, one per dimension."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import font, wrapped_title

WIDTH = 900


def embedding_figure(embedding: np.ndarray, tokens: int) -> go.Figure:
    """Each of the embedding's numbers, by dimension: the vector other sentences are compared with."""
    title = (f"The sentence's embedding: {len(embedding)} numbers, the mean of the last layer's {tokens} token "
             f"vectors, scaled to length {np.linalg.norm(embedding):.2f}")
    figure = go.Figure(go.Bar(x=np.arange(len(embedding)), y=embedding, marker_color="#4c72b0",
                              hovertemplate="dimension %{x}: %{y:.4f}<extra></extra>"))
    figure.update_layout(title=dict(text=wrapped_title(title, WIDTH), font=dict(size=font(14))), width=WIDTH,
                         height=font(260), margin=dict(l=60, r=20, t=70, b=50), bargap=0, font=dict(size=font(12)))
    figure.update_xaxes(title_text="dimension")
    figure.update_yaxes(title_text="value")
    return figure
