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
    figure.update_xaxes(type="category", side="top", tickangle=-60, title=column_title)
    figure.update_yaxes(type="category", autorange="reversed", title=row_title)


def figure_html(figure: go.Figure) -> str:
    """A standalone HTML file with plotly.js inlined, so the download works offline too."""
    return figure.to_html(include_plotlyjs=True, full_html=True)
