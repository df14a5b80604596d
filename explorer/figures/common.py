"""What every figure shares: token labels that are safe to show, token axes, and offline HTML export."""

from __future__ import annotations

import html

import plotly.graph_objects as go


def display_tokens(tokens: list[str]) -> list[str]:
    """Pieces as labels: the word-start mark ▁ kept, markup escaped.

    Plotly renders a few HTML-like tags (<b>, <a href>, <br>) in labels and hover text; escaping makes a token
    such as `<img src=x onerror=...>` show as its characters.
    """
    return [html.escape(token, quote=False) for token in tokens]


def position_labels(tokens: list[str]) -> list[str]:
    """Unique axis labels "i token" (escaped): repeated tokens stay separate rows, hover names both."""
    return [f"{i} {token}" for i, token in enumerate(display_tokens(tokens))]


def token_axes(figure: go.Figure, row_title: str = "query", column_title: str = "key") -> None:
    """Key tokens along the top (rotated), query tokens down the side; the top margin grows with the longest
    key label so the figure's title never sits on the labels, and the figure grows with it."""
    figure.update_xaxes(type="category", side="top", tickangle=-60, title=column_title)
    figure.update_yaxes(type="category", autorange="reversed", title=row_title)
    longest = max((len(str(label)) for trace in figure.data for label in (trace.x if trace.x is not None else [])),
                  default=0)
    labels_height = int(5.5 * min(longest, 40)) + 30          # rotated labels plus the axis title
    margin_top = (figure.layout.margin.t or 60) + labels_height
    figure.update_layout(margin=dict(t=margin_top), height=(figure.layout.height or 450) + labels_height,
                         title=dict(y=1.0, yanchor="top", yref="container", pad=dict(t=12)))


def figure_html(figure: go.Figure) -> str:
    """A standalone HTML file with plotly.js inlined, so the download works offline too."""
    return figure.to_html(include_plotlyjs=True, full_html=True)
