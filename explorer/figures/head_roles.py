"""Figures of head roles: the layers × heads map, offset histograms, syntactic evidence."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from explorer.figures.common import (NARROW_WIDTH, SMALLEST_FONT, cell_size, every_label, font, label_font,
                                     round_step, text_width, title_height, wrapped_title)
from explorer.analyses.results import HeadRoles
from models.vocabulary import KIND_TITLES

ROLE_COLOURS = [("none", "#e8e8e8"), ("positional", "#4c78a8"), ("syntactic", "#54a24b"), ("rare-token", "#e45756"),
                ("several", "#b279a2")]
# What a cell of the map says about its head's role: one short word, or the initials of its several roles.
ROLE_SHORT = {"positional": "pos", "syntactic": "syn", "rare-token": "rare"}
# What can colour the map: the measure of importance chosen on the page, the role, or the confidence.
COLOUR_BY = ("importance", "role", "confidence")
# Past this many heads a cell is too narrow for a number at a readable size: the cells keep colour and hover only.
MOST_HEADS_WITH_TEXT = 16
# Px: a map's own width, the same at every window width: whole in a projector's 564 px column (1024 px window,
# sidebar open), two side by side in the wide page's (940 px in Chromium at 1400 px). Stretched over a half
# column at 1024 px, an 8-head map's cells were 20 px and their values ran into each other ("0.01€0.01701").
# MAP_FRAME: the px of it that are not cells (the layer labels, the colour bar and its title, the margins).
MAP_WIDTH = 450
MAP_FRAME = 150
# Importance measures where a rise means the head matters (masking it hurts); for the BLEU change a fall does.
RISE_HURTS = {"gradient_importance", "gradient_importance_normalised", "loss_change", "perplexity_change"}


def role_index(roles: list[str]) -> int:
    if not roles:
        return 0
    if len(roles) > 1:
        return 4
    return [name for name, _ in ROLE_COLOURS].index(roles[0])


def role_short(roles: list[str]) -> str:
    """'pos', 'syn', 'rare'; several roles by their initials, 'P+R'; none: ''."""
    if len(roles) == 1:
        return ROLE_SHORT.get(roles[0], roles[0][:4])
    return "+".join(role[0].upper() for role in roles)


def decimals(values) -> int:
    """Decimals that give the largest of `values` two significant digits, so raw gradient scores (~0.0004) never
    read 0.000; one map's cells all alike (0.020 beside 0.021), a head much below the largest reading 0.00."""
    largest = max((abs(v) for v in values if v is not None and np.isfinite(v)), default=0.0)
    if largest == 0:
        return 2
    return int(np.clip(1 - np.floor(np.log10(largest)), 0, 8))


def short_number(value: float, places: int | None = None) -> str:
    """A cell's number, at `places` decimals (decimals([value]) when not given)."""
    return f"{value:.{decimals([value]) if places is None else places}f}"


def cell_font(heads: int, longest: int = 0) -> int:
    """The font (px) of the cells' text: a size under the axis labels', never under the smallest a room reads
    (SMALLEST_FONT)."""
    return max(font(SMALLEST_FONT), label_font(heads) - (1 if longest <= 5 else 2))


def cell_width(heads: int) -> float:
    """Px of a map's cell across, at MAP_WIDTH (scaled with the fonts in projector mode)."""
    return (font(MAP_WIDTH) - font(MAP_FRAME)) / heads


def text_fits(texts, heads: int, size: int) -> bool:
    """Whether every cell's text fits its cell at `size` px (text_width's generous reckoning: "0.017" at 11 px is
    35 px there, 27 px drawn)."""
    longest = max((text_width(text, size) for text in texts if text), default=0)
    return heads <= MOST_HEADS_WITH_TEXT and longest <= cell_width(heads)


def role_map(entries: list[HeadRoles], layers: int, heads: int, importance: dict[str, float], title: str,
             colour_by: str = "role", measure: str = "importance", measure_key: str = "",
             measure_short: str = "importance") -> go.Figure:
    """Heads of one kind as a layers × heads grid, coloured by `colour_by`: "importance" (the scores in
    `importance`, named `measure`, `measure_short` on the colour bar; measure_key, its key in
    head_importance.json, sets the direction of the scale), "role" or "confidence". Each cell shows one short
    value of what colours it; hover tells everything."""
    if colour_by == "importance" and not importance:
        colour_by = "role"
    z = np.full((layers, heads), np.nan)
    text = np.full((layers, heads), "", dtype=object)
    hover = np.full((layers, heads), "", dtype=object)
    places = decimals(importance.get(entry.spec) for entry in entries)
    for entry in entries:
        layer, head = entry.layer, entry.head
        share = importance.get(entry.spec)
        if colour_by == "role":
            z[layer, head], text[layer, head] = role_index(entry.roles), role_short(entry.roles)
        elif colour_by == "confidence":
            z[layer, head], text[layer, head] = entry.confidence, f"{entry.confidence:.2f}"
        elif share is not None:
            z[layer, head], text[layer, head] = share, short_number(share, places)
        hover[layer, head] = (f"{entry.spec}<br>{', '.join(entry.roles) or 'no role'}"
                              f"<br>confidence {entry.confidence:.2f}"
                              + (f"<br>{measure} {share:.3g}" if share is not None else ""))   # raw scores ~0.0004
    colour = dict(colorbar=dict(thickness=12, title=dict(side="right")))
    if colour_by == "role":
        count = len(ROLE_COLOURS)
        scale = []
        for i, (_, shade) in enumerate(ROLE_COLOURS):
            scale += [[i / count, shade], [(i + 1) / count, shade]]
        colour = dict(zmin=-0.5, zmax=count - 0.5, colorscale=scale, colorbar=dict(
            thickness=12, tickvals=list(range(count)), ticktext=[name for name, _ in ROLE_COLOURS],
            title=dict(text="role", side="right")))
    elif colour_by == "confidence":
        colour = dict(zmin=0, zmax=1, colorscale="Blues", colorbar=dict(
            thickness=12, tickformat=".1f", title=dict(text="confidence", side="right")))
    else:
        values = z[~np.isnan(z)]
        if measure_key.endswith("_change") or (values.size and values.min() < 0):
            # A change on masking, either way: white at no change, red where masking hurts.
            colour = dict(zmid=0, colorscale="RdBu", reversescale=measure_key in RISE_HURTS)
        else:
            colour = dict(zmin=0, colorscale="YlOrRd")
        colour["colorbar"] = dict(thickness=12, title=dict(text=measure_short, side="right"))
    longest = max((len(t) for t in text.flat), default=0)
    size = cell_font(heads, longest)
    # A value is written in its cell only where every cell holds its own at a readable size; else hover has it.
    figure = go.Figure(go.Heatmap(
        z=z, text=text, customdata=hover, texttemplate="%{text}" if text_fits(text.flat, heads, size) else "",
        textfont=dict(size=size), x=list(range(heads)), y=list(range(layers)), xgap=2, ygap=2,
        hovertemplate="%{customdata}<extra></extra>", hoverongaps=False, **colour))
    # The head labels stand on top: the title goes above them, in a margin of its own. A layer is two label
    # lines tall, room for a cell's text and its colour around it. The map has its own width (MAP_WIDTH).
    figure.update_layout(title=dict(text=title, y=1.0, yanchor="top", yref="container", pad=dict(t=10)),
                         height=105 + 2 * cell_size(heads) * layers, width=font(MAP_WIDTH),
                         margin=dict(l=10, r=10, t=95, b=10), plot_bgcolor="rgba(0,0,0,0)")
    figure.update_xaxes(**every_label(heads, side="top", title=dict(text="head", standoff=4)), showgrid=False)
    figure.update_yaxes(**every_label(layers, autorange="reversed", title=dict(text="layer", standoff=4)),
                        showgrid=False)
    return figure


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
