"""Figures of pruning: the token diff, per-step probabilities under both models, the pruning curve."""

from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.analyses.corpus.corpus_scoring import scorer_by_metric
from explorer.analyses.corpus.pruning import DiffPiece, StepComparison
from explorer.analyses.corpus.results import PruningCurve
from explorer.figures.common import plural
from explorer.figures.decoding import nats_scale
from explorer.figures.token_bars import GREEN, ORANGE, Bars, TokenBars

DIFF_STYLES = {"delete": "background:#fde0dd;text-decoration:line-through", "insert": "background:#d9f0d3",
               "equal": ""}


def diff_html(diff: list[DiffPiece]) -> str:
    """The unpruned → pruned translation as pieces: removed struck through in red, added in green.

    Every piece is HTML-escaped, so a sentence's own markup shows as text.
    """
    spans = []
    for piece in diff:
        parts = ([("delete", piece.before), ("insert", piece.after)] if piece.operation == "replace"
                 else [(piece.operation, piece.before if piece.operation != "insert" else piece.after)])
        for operation, tokens in parts:
            for token in tokens:
                spans.append(f'<span style="{DIFF_STYLES[operation]};padding:1px 2px;margin:1px;border-radius:3px">'
                             f"{html.escape(token)}</span>")
    # A wrapping row: the pieces break onto new lines inside the column instead of running past its edge.
    return ('<div style="font-family:monospace;line-height:2;display:flex;flex-wrap:wrap;max-width:100%">'
            + "".join(spans) + "</div>")


def step_comparison_described(steps: StepComparison) -> TokenBars:
    """A row for each model's probability and one for the KL divergence, a column a step of the unpruned output."""
    tick, top = nats_scale(steps.kl)            # KL in nats: a round top, as entropy's
    return TokenBars(
        steps.tokens,
        [Bars("unpruned", list(steps.unpruned), 1.0, 60), Bars("pruned", list(steps.pruned), 1.0, 60, ORANGE),
         Bars("KL (nats)", list(steps.kl), top, 45, GREEN, tick=tick)],
        "The unpruned output's tokens: probability under each model, and per-step KL",
        "a column a step: the probability of the unpruned output's token without (blue) and with (orange) the pruned "
        "heads, 0–1, and the KL divergence between the two models' distributions there (green); hover a step for "
        "its numbers", "prune-steps")


OTHER_ORDER_COLOURS = ("#54a24b", "#b279a2", "#f58518")


def curve_title(curve: PruningCurve | dict) -> str:
    """Says where the quality was measured and where the importance order came from: in- or out-of-sample."""
    curve = PruningCurve.from_json(curve)
    where = f" of {curve.corpus}" if curve.corpus else ""
    scorer = scorer_by_metric(curve.quality)           # what its metric is measured on, and how it reads
    title = f"Pruning curve: {scorer.metric} ({scorer.metric_note}) on {curve.pairs} {scorer.example_noun}{where}"
    source = curve.importance_corpus
    if source:
        sample = "the same file: in-sample" if source == curve.corpus else "other sentences: out-of-sample"
        title += f"<br><sup>importance measured on {source} ({sample})</sup>"
    return title


def curve_figure(curve: PruningCurve | dict) -> go.Figure:
    curve = PruningCurve.from_json(curve)
    kinds = list(curve.kinds)
    metric = curve.quality
    figure = make_subplots(rows=1, cols=len(kinds), shared_yaxes=True,
                           subplot_titles=[f"{k} ({plural(curve.kinds[k].heads, 'head')})" for k in kinds])
    for column, kind in enumerate(kinds, start=1):
        data = curve.kinds[kind]
        x = [100 * f for f in data.fractions]
        if data.random_mean:
            upper = [m + s for m, s in zip(data.random_mean, data.random_std)]
            lower = [m - s for m, s in zip(data.random_mean, data.random_std)]
            figure.add_trace(go.Scatter(x=x + x[::-1], y=upper + lower[::-1], fill="toself", line=dict(width=0),
                                        fillcolor="rgba(228,87,86,0.2)", showlegend=False, hoverinfo="skip"),
                             row=1, col=column)
            figure.add_trace(go.Scatter(x=x, y=data.random_mean, name="random order (mean ± std)",
                                        line=dict(color="#e45756", dash="dash"), showlegend=column == 1,
                                        hovertemplate="%{x:.0f}% pruned<br>" + metric + " %{y:.2f}<extra>random</extra>"),
                             row=1, col=column)
        main_name = f"least important first ({curve.measure})" if curve.measure else "least important first"
        figure.add_trace(go.Scatter(x=x, y=data.importance, name=main_name, line=dict(color="#4c78a8"),
                                    showlegend=column == 1,
                                    hovertemplate="%{x:.0f}% pruned<br>" + metric + " %{y:.2f}<extra>by importance</extra>"),
                         row=1, col=column)
        for (name, points), colour in zip((data.other_orders or {}).items(), OTHER_ORDER_COLOURS):
            figure.add_trace(go.Scatter(x=x, y=points, name=f"least important first ({name})",
                                        line=dict(color=colour, dash="dot"), showlegend=column == 1,
                                        hovertemplate="%{x:.0f}% pruned<br>" + metric + " %{y:.2f}<extra>" + name + "</extra>"),
                             row=1, col=column)
        figure.update_xaxes(title="% of heads pruned", row=1, col=column)
    figure.update_yaxes(title=metric, row=1, col=1)
    # The legend goes under the plots: above, it printed over the title's second line.
    figure.update_layout(title=curve_title(curve), height=480, margin=dict(l=10, r=10, t=90, b=70),
                         legend=dict(orientation="h", y=-0.22, yanchor="top", x=0))
    return figure
