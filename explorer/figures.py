"""Plotly figures of attention. Token text is escaped: plotly renders a few HTML tags in labels."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go


def display_tokens(tokens: list[str]) -> list[str]:
    """Pieces as a reader expects them: SentencePiece's word-start mark shown, markup escaped."""
    return [html.escape(t.replace("▁", "_"), quote=False) for t in tokens]


def attention_heatmap(pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str],
                      title: str = "") -> go.Figure:
    """pattern [query, key] → heatmap with queries as rows; hover shows query token, key token, weight."""
    queries, keys = display_tokens(query_tokens), display_tokens(key_tokens)
    # Positions (not token strings) on the axes: repeated tokens would otherwise merge into one row.
    hover = np.array([[[q, k] for k in keys] for q in queries], dtype=object)
    figure = go.Figure(go.Heatmap(
        z=pattern, x=list(range(len(keys))), y=list(range(len(queries))), customdata=hover, zmin=0, zmax=1,
        colorscale="Blues", hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.3f}<extra></extra>",
    ))
    figure.update_layout(title=title, height=max(300, 24 * len(queries) + 120), margin=dict(l=10, r=10, t=40, b=10))
    figure.update_xaxes(tickvals=list(range(len(keys))), ticktext=keys, side="top", tickangle=-60, title="key")
    figure.update_yaxes(tickvals=list(range(len(queries))), ticktext=queries, autorange="reversed", title="query")
    return figure
