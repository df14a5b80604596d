"""The head atlas's figures: the map of a stack's heads, one head's queries and keys in one plane, and the search's
ranking. Plain plotly, sized for a 1024-pixel projector's column; every text at least 12 px (projector mode scales
it up, common.font)."""

from __future__ import annotations

import plotly.colors
import plotly.graph_objects as go

from explorer.figures.common import display_tokens, font

COLOURINGS = ("layer", "role", "importance", "sink share")
ROLE_COLOURS = {"positional": "#1f77b4", "syntactic": "#2ca02c", "rare-token": "#d62728", "several": "#9467bd",
                "none": "#bbbbbb"}


def head_map_figure(heads: list, colour_by: str, values: dict, chosen: str | None, pruned: set[str],
                    title: str, labelled: set[str] = frozenset()) -> go.Figure:
    """One point per head at its MDS place, named; coloured by `colour_by` (values: head name → number or role),
    the chosen head ringed in red, pruned heads drawn as ✕. Hover: the head and every number behind the map. A map of
    more than NAMED heads names only the chosen head and those in `labelled` (its nearest)."""
    names = [head.name for head in heads]
    hover = [f"<b>{head.name}</b> (layer {head.layer}, head {head.head})<br>{colour_by}: {values.get(head.name, '—')}"
             f"<br>sink share {head.sink_share:.0%}" for head in heads]
    symbols = ["x" if name in pruned else "circle" for name in names]
    figure = go.Figure()
    if colour_by in ("role", "layer"):          # categories: a trace (and a legend entry) each
        categories = ROLE_COLOURS if colour_by == "role" else layer_colours(sorted({h.layer for h in heads}))
        for category, colour in categories.items():
            members = [i for i, name in enumerate(names) if values.get(name, "none") == category]
            if members:
                label = f"layer {category}" if colour_by == "layer" else category
                figure.add_trace(points(heads, members, hover, symbols, dict(color=colour), label))
    else:
        numbers = [values.get(name) for name in names]
        marker = dict(color=[n if n is not None else float("nan") for n in numbers], colorscale="Viridis",
                      showscale=True, colorbar=dict(title=dict(text=colour_by, font=dict(size=font(12))),
                                                    tickfont=dict(size=font(12)), thickness=12))
        figure.add_trace(points(heads, list(range(len(heads))), hover, symbols, marker, colour_by))
    if chosen in names:
        head = heads[names.index(chosen)]
        figure.add_trace(go.Scatter(x=[head.x], y=[head.y], mode="markers", hoverinfo="skip", showlegend=False,
                                    marker=dict(size=font(26), color="rgba(0,0,0,0)", line=dict(color="#d62728",
                                                                                                 width=3))))
    if len(heads) > NAMED:                  # else every head is named beside its point already
        shown = [head for head in heads if head.name == chosen or head.name in labelled]
        figure.add_trace(go.Scatter(x=[h.x for h in shown], y=[h.y for h in shown], mode="text", hoverinfo="skip",
                                    showlegend=False, text=[h.name for h in shown], textposition="bottom center",
                                    textfont=dict(size=font(13), color=["#d62728" if h.name == chosen else "#222"
                                                                        for h in shown])))
    figure.update_layout(title=dict(text=title, font=dict(size=font(14))), height=font(520),
                         margin=dict(l=10, r=10, t=font(60), b=10), font=dict(size=font(12)),
                         legend=dict(orientation="h", y=-0.02, yanchor="top", font=dict(size=font(12))),
                         clickmode="event+select", dragmode="pan")
    figure.update_xaxes(showticklabels=False, title=None, zeroline=False, showgrid=False)
    figure.update_yaxes(showticklabels=False, title=None, zeroline=False, showgrid=False, scaleanchor="x")
    return figure


NAMED = 30      # heads a map names beside their points; more would overlap (hover names each, the chosen one is named)


def layer_colours(layers: list[int]) -> dict[int, str]:
    """An ordered palette (Viridis, its light yellow end left out): layer 0 dark blue … the last layer green."""
    stops = [0.85 * i / max(1, len(layers) - 1) for i in range(len(layers))]
    return dict(zip(layers, plotly.colors.sample_colorscale("Viridis", stops)))


def points(heads: list, members: list[int], hover: list[str], symbols: list[str], marker: dict,
           name: str) -> go.Scatter:
    picked = [heads[i] for i in members]
    marker = dict(marker, size=font(14), symbol=[symbols[i] for i in members], line=dict(width=1, color="white"))
    if isinstance(marker.get("color"), list):
        marker["color"] = [marker["color"][i] for i in members]
    mode = "markers+text" if len(heads) <= NAMED else "markers"
    return go.Scatter(x=[h.x for h in picked], y=[h.y for h in picked], mode=mode, name=name,
                      text=[h.name for h in picked], textposition="top center", textfont=dict(size=font(12)),
                      customdata=[h.name for h in picked], hovertext=[hover[i] for i in members],
                      hovertemplate="%{hovertext}<extra></extra>", marker=marker)


def space_figure(points_: list, colour_by: str, title: str) -> go.Figure:
    """Queries (circles) and keys (diamonds) of one head in one plane; coloured by position, or blue queries and
    orange keys. Hover: the token, its sentence and position, and a query's most attended key."""
    figure = go.Figure()
    for side, symbol, colour in (("key", "diamond", "#ff7f0e"), ("query", "circle", "#1f77b4")):     # queries on top
        shown = [p for p in points_ if p.side == side]
        marker = dict(symbol=symbol, size=font(7), opacity=0.6)
        if colour_by == "position":
            marker.update(color=[p.position for p in shown], colorscale="Viridis", cmin=0,
                          cmax=max(p.position for p in points_) or 1, showscale=side == "query",
                          colorbar=dict(title=dict(text="position", font=dict(size=font(12))),
                                        tickfont=dict(size=font(12)), thickness=12))
        else:
            marker.update(color=colour)
        hover = [f"{side} “{p.token}”, sentence {p.sentence}, position {p.position}"
                 + (f"<br>attends most to “{p.top_key}”" if p.top_key else "") for p in shown]
        figure.add_trace(go.Scattergl(x=[p.x for p in shown], y=[p.y for p in shown], mode="markers",
                                      name={"query": "queries", "key": "keys"}[side], marker=marker, hovertext=hover,
                                      hovertemplate="%{hovertext}<extra></extra>"))
    figure.update_layout(title=dict(text=title, font=dict(size=font(14))), height=font(480),
                         margin=dict(l=10, r=10, t=font(60), b=10), font=dict(size=font(12)),
                         legend=dict(orientation="h", y=-0.02, yanchor="top", font=dict(size=font(12))))
    figure.update_xaxes(showticklabels=False, zeroline=False, showgrid=False)
    figure.update_yaxes(showticklabels=False, zeroline=False, showgrid=False, scaleanchor="x")
    return figure


def search_figure(found: list, chance: float, title: str, top: int = 12) -> go.Figure:
    """The best heads' shares as bars with their 95% intervals (each value written past its interval), and uniform
    attention's share as a dashed line named above the bars."""
    shown = found[:top][::-1]
    names = [h.name for h in shown]
    figure = go.Figure(go.Bar(x=[h.share for h in shown], y=names, orientation="h", marker_color="#1f77b4",
                              error_x=dict(type="data", symmetric=False, array=[h.high - h.share for h in shown],
                                           arrayminus=[h.share - h.low for h in shown], color="#444"),
                              customdata=[[h.low, h.high] for h in shown],
                              hovertemplate="%{y}: %{x:.1%} (95% interval %{customdata[0]:.1%}–%{customdata[1]:.1%})"
                                            "<extra></extra>"))
    figure.add_trace(go.Scatter(x=[h.high + 0.01 for h in shown], y=names, mode="text", text=[f"{h.share:.0%}" for h in shown],
                                textposition="middle right", textfont=dict(size=font(12)), hoverinfo="skip",
                                cliponaxis=False))
    figure.add_vline(x=chance, line=dict(color="#d62728", dash="dash"))
    figure.add_annotation(x=chance, y=1.0, yref="paper", yanchor="bottom", showarrow=False, xanchor="left",
                          text=f"uniform attention {chance:.0%}", font=dict(size=font(12), color="#d62728"))
    figure.update_layout(title=dict(text=title, font=dict(size=font(14))), height=font(100) + len(shown) * font(24),
                         margin=dict(l=10, r=40, t=font(80), b=30), font=dict(size=font(12)), showlegend=False)
    figure.update_xaxes(tickformat=".0%", range=[0, 1.1], tickfont=dict(size=font(12)))
    figure.update_yaxes(type="category", tickfont=dict(size=font(12)), automargin=True)
    return figure


def thumbnail_figure(pattern, queries: list[str], keys: list[str], title: str) -> go.Figure:
    """A head's pattern on one sentence, small: rows the queries, columns the keys, a label each up to 24 tokens
    (fewer beyond: about 24 a side; hover names every cell), at most 60 rows' height however long the sentence."""
    queries, keys = [f"{i} {t}" for i, t in enumerate(display_tokens(queries))], \
        [f"{i} {t}" for i, t in enumerate(display_tokens(keys))]
    figure = go.Figure(go.Heatmap(z=pattern, x=keys, y=queries, colorscale="Blues", zmin=0, zmax=1,
                                  colorbar=dict(thickness=10, tickformat=".0%", tickfont=dict(size=font(12))),
                                  hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.1%}<extra></extra>"))
    step = -(-max(len(queries), len(keys)) // 24)               # a label every `step` tokens: about 24 a side
    # the keys' labels, rotated, in the top margin under the title
    figure.update_layout(title=dict(text=title, font=dict(size=font(14)), y=1.0, yanchor="top", yref="container",
                                    pad=dict(t=8)),
                         height=font(190) + min(len(queries), 60) * font(12), margin=dict(l=10, r=10, t=font(140), b=10),
                         font=dict(size=font(12)))
    figure.update_xaxes(type="category", side="top", tickangle=-60, tickfont=dict(size=font(11)), dtick=step,
                        title=dict(text="key", font=dict(size=font(12))))
    figure.update_yaxes(type="category", autorange="reversed", tickfont=dict(size=font(11)), dtick=step,
                        title=dict(text="query", font=dict(size=font(12))))
    return figure
