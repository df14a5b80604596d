"""Figures of one head's role and of the roles forming in training: offset histograms, syntactic evidence, the
evolution over epochs. The layers × heads map of every head: explorer/figures/role_map.py."""

from __future__ import annotations

import plotly.graph_objects as go

from explorer.analyses.corpus.results import HeadRoles
from explorer.figures.common import (
    NARROW_WIDTH,
    SMALLEST_FONT,
    font,
    round_step,
    text_width,
    title_height,
    wrapped_title,
)
from explorer.models.vocabulary import KIND_TITLES


def offset_histogram(entry: HeadRoles) -> go.Figure:
    positional = entry.positional
    histogram = positional.histogram
    labels = [("≤" if k == min(histogram, key=int) else "≥" if k == max(histogram, key=int) else "") + k for k in histogram]
    figure = go.Figure(go.Bar(x=labels, y=list(histogram.values()),
                              hovertemplate="offset %{x}<br>share of tokens %{y:.3f}<extra></extra>"))
    figure.update_layout(title=f"{entry.spec}: where its largest weight sits, relative to the query "
                               f"(top: {positional.offset:+d}, {positional.share:.0%})",
                         height=300, yaxis=dict(range=[0, 1], title="share of tokens"), xaxis=dict(title="key − query"),
                         margin=dict(l=10, r=10, t=50, b=10))
    figure.update_xaxes(type="category")
    return figure


def syntactic_evidence(entry: HeadRoles, short: bool = False) -> go.Figure:
    """Accuracy along each relation against the positional baseline, on every treebank sentence (short: on the
    short ones)."""
    labels, accuracy, baseline, counts = [], [], [], []
    for relation, directions in (entry.syntactic_short if short else entry.syntactic).items():
        for direction, score in directions.items():
            labels.append(f"{relation} {direction}")
            accuracy.append(score["accuracy"]), baseline.append(score["baseline"]), counts.append(score["count"])
    figure = go.Figure([
        go.Bar(x=labels, y=accuracy, name="this head", customdata=counts,
               hovertemplate="%{x}<br>accuracy %{y:.3f}<br>%{customdata} arcs<extra></extra>"),
        go.Bar(x=labels, y=baseline, name="positional baseline",
               hovertemplate="%{x}<br>baseline %{y:.3f}<extra></extra>")])
    figure.update_layout(title=f"{entry.spec}: how often its top word is the other end of the arc",
                         barmode="group", height=360, yaxis=dict(range=[0, 1], title="accuracy"),
                         margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=1.1))
    figure.update_xaxes(tickangle=-45)
    return figure


# What the evolution figure can draw per head: (label, key in head_evolution.json, threshold key or None).
EVOLUTION_MEASURES = {
    "share of tokens at its top offset": ("share", "positional"),
    "confidence (mean largest weight)": ("confidence", None),
    "sentences peaking on the rarest token": ("rare_rate", "rare_rate"),
}
LAYER_COLOURS = ("#f58518", "#54a24b", "#4c78a8", "#b279a2", "#e45756", "#72b7b2")


def evolution_figure(evolution: dict, measure: str, thresholds: dict, highlight: int = 3) -> go.Figure:
    """One line per head over the training epochs, a column per attention kind, the role threshold dashed.

    Heads are coloured by layer; the `highlight` heads that end highest in each column are
    drawn thick and named at their last point, so the few heads that specialise stand out of the many that don't.
    Val BLEU runs underneath, on the same epochs.
    """
    from plotly.subplots import make_subplots

    key, threshold_key = EVOLUTION_MEASURES[measure]
    kinds = [k for k in KIND_TITLES if any(h["kind"] == k and any(v is not None for v in h[key])
                                          for h in evolution["heads"])]
    columns = max(1, len(kinds))
    figure = make_subplots(rows=2, cols=columns, row_heights=[0.78, 0.22], vertical_spacing=0.1,
                           shared_xaxes=True, horizontal_spacing=0.04,
                           specs=[[{} for _ in range(columns)], [{"colspan": columns}] + [None] * (columns - 1)],
                           subplot_titles=[KIND_TITLES[k] for k in kinds] + ["validation BLEU (greedy)"])
    epochs = evolution["epochs"]
    for column, kind in enumerate(kinds, start=1):
        lines = [h for h in evolution["heads"] if h["kind"] == kind]
        final = {h["spec"]: (h[key][-1] if h[key][-1] is not None else -1) for h in lines}
        ranked = sorted(final, key=final.get, reverse=True)[:highlight]
        top = set(ranked)
        label_y = label_positions([final[spec] for spec in ranked])
        for line in sorted(lines, key=lambda h: h["spec"] in top):     # highlighted heads drawn last, on top
            strong = line["spec"] in top
            offsets = line.get("offset") or [None] * len(epochs)
            hover = [f"{line['spec']} · epoch {e}<br>{measure}: {v:.2f}" if v is not None else ""
                     for e, v in zip(epochs, line[key])]
            if key == "share":
                hover = [h + (f" (offset {o:+d})" if o is not None else "") for h, o in zip(hover, offsets)]
            hover = [h + f"<br>roles: {', '.join(r) or 'none'}" for h, r in zip(hover, line["roles"])]
            figure.add_trace(go.Scatter(
                x=epochs, y=line[key], mode="lines", name=line["spec"], showlegend=False,
                line=dict(color=LAYER_COLOURS[line["layer"] % len(LAYER_COLOURS)], width=3 if strong else 1),
                opacity=1.0 if strong else 0.35, text=hover, hovertemplate="%{text}<extra></extra>"),
                row=1, col=column)
            if strong and line[key][-1] is not None:
                # The offset under the head's name: a label as narrow as the name, room for it beside the lines.
                label = line["spec"] + (f"<br>({offsets[-1]:+d})" if key == "share" and offsets[-1] is not None else "")
                figure.add_annotation(x=epochs[-1], y=label_y[ranked.index(line["spec"])], text=label, showarrow=False,
                                      xanchor="left", xshift=4, font=dict(size=11,
                                      color=LAYER_COLOURS[line["layer"] % len(LAYER_COLOURS)]), row=1, col=column)
        if threshold_key and threshold_key in thresholds:
            figure.add_hline(y=thresholds[threshold_key], line=dict(color="#e45756", dash="dash", width=1.5),
                             annotation_text=f"role threshold {thresholds[threshold_key]:.0%}",
                             annotation_position="top left", annotation_font_size=font(SMALLEST_FONT), row=1,
                             col=column)
        figure.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=column)
        figure.update_xaxes(range=[epochs[0], epochs[-1] + end_label_room(epochs, len(kinds))], row=1, col=column)
    layers = sorted({h["layer"] for h in evolution["heads"]})
    for layer in layers:      # legend entries for the layer colours
        figure.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"layer {layer}",
                                    line=dict(color=LAYER_COLOURS[layer % len(LAYER_COLOURS)], width=3)), row=1, col=1)
    # Epochs numbered a round step apart that keeps them clear of each other in a projector's column (every 4th
    # of 60 ran together in a panel 200 px wide), and only under the lines, not under their end labels.
    panel = (NARROW_WIDTH - 80) / max(1, len(kinds))
    step = round_step(epochs[-1] - epochs[0] + end_label_room(epochs, len(kinds)), panel)
    figure.update_xaxes(tickmode="array", tickvals=[e for e in epochs if e % step == 0], showticklabels=True)
    figure.add_trace(go.Scatter(x=epochs, y=evolution.get("val_bleu") or [], mode="lines+markers", showlegend=False,
                                line=dict(color="#555"), marker=dict(size=4),
                                hovertemplate="epoch %{x}<br>val BLEU %{y:.2f}<extra></extra>"), row=2, col=1)
    figure.update_xaxes(title="epoch", range=[epochs[0] - 0.5, epochs[-1] + 0.5], row=2, col=1)
    figure.update_yaxes(title=measure.split(" (")[0], row=1, col=1)
    corpus = evolution.get("corpus", {})
    # The title in lines of a projector's column: one line ran 300 px past the figure's edge at 1024 px.
    title = wrapped_title(f"How the heads formed during training — {measure}, measured each epoch on "
                          f"{corpus.get('name') or 'in-domain text'} ({corpus.get('sentences', '?')} sentences)",
                          NARROW_WIDTH - 20)
    figure.update_layout(
        title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
        height=600 + title_height(title), margin=dict(l=10, r=10, t=40 + title_height(title), b=10),
        hovermode="closest", legend=dict(orientation="h", y=-0.12, x=0))
    return figure


def end_label_room(epochs: list[int], columns: int) -> float:
    """Epochs beyond the last one where its end labels (a head's name, "cross.2.5", at 11 px) stand, in a
    projector's column of `columns` panels: they ran past the figure's edge at 1024 px."""
    panel = (NARROW_WIDTH - 80) / max(1, columns)         # px of a panel, less the y-axis title and ticks
    label = text_width("cross.2.5", font(SMALLEST_FONT)) + 8
    span = max(1, epochs[-1] - epochs[0])
    return max(1.2, span * label / max(panel - label, panel / 2))


def label_positions(values: list[float], gap: float = 0.08) -> list[float]:
    """y positions for end-of-line labels of values sorted high to low, at least `gap` apart, never overlapping."""
    positions = []
    for value in values:
        positions.append(value if not positions else min(value, positions[-1] - gap))
    return positions
