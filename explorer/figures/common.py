"""What every figure shares: token labels that are safe to show, token axes, and offline HTML export."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go


def display_tokens(tokens: list[str]) -> list[str]:
    """Pieces as labels: the word-start mark ▁ kept, markup escaped.

    Plotly renders a few HTML-like tags (<b>, <a href>, <br>) in labels and hover text; escaping makes a token
    such as `<img src=x onerror=...>` show as its characters.
    """
    return [html.escape(token, quote=False) for token in tokens]


def hover_pairs(queries: list[str], keys: list[str]) -> np.ndarray:
    """customdata [query, key, 2] so hover text can name both tokens of a cell."""
    pairs = np.empty((len(queries), len(keys), 2), dtype=object)
    for i, query in enumerate(queries):
        for j, key in enumerate(keys):
            pairs[i, j] = (f"{i}: {query}", f"{j}: {key}")
    return pairs


def token_axes(figure: go.Figure, rows: list[str], columns: list[str], row_title: str = "query",
               column_title: str = "key") -> None:
    """Positions on the axes, labelled with (already escaped) tokens: repeated tokens stay separate rows."""
    figure.update_xaxes(tickvals=list(range(len(columns))), ticktext=columns, side="top", tickangle=-60,
                        title=column_title)
    figure.update_yaxes(tickvals=list(range(len(rows))), ticktext=rows, autorange="reversed", title=row_title)


def figure_html(figure: go.Figure) -> str:
    """A standalone HTML file with plotly.js inlined, so the download works offline too."""
    return figure.to_html(include_plotlyjs=True, full_html=True)
