"""The Images page's heads: which heads to switch off (kept in the URL), each head's importance on the held-out
digits (Michel et al. 2019), the held-out accuracy with and without the pruned heads, and the accuracy as heads
are pruned least important first (explorer/analyses/sentence/image_heads.py)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.analyses.sentence.image_heads import held_out_score, image_head_importance, image_pruning_curve
from explorer.capture.head_sets import HeadSpecError, all_heads, format_heads, parse_heads
from explorer.figures.common import font
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.session import ref_of
from explorer.pages.components.widgets import show_figure
from explorer.service import ModelRef


@st.cache_data(show_spinner="Measuring every head on the 360 held-out digits…", max_entries=8)
def importance_and_curve(ref: ModelRef, _model) -> tuple[list, list]:
    """Shared by every session: the same model and digits give the same numbers."""
    importance = image_head_importance(_model)
    return importance.tolist(), image_pruning_curve(_model, importance)


def pruned_heads(model) -> list:
    """The heads ticked in the picker above the image (`image_pruned=` in the URL)."""
    every = [str(spec) for spec in all_heads(model)]
    url_state.kept_text("image_pruned", "image_pruned")
    try:
        ticked = [str(spec) for spec in parse_heads(st.session_state.get("image_pruned", ""), model)]
    except HeadSpecError:
        ticked = []
    chosen = st.multiselect("Heads to switch off (pruned)", every, default=ticked, key="image_pruned_heads",
                            help=term_help("pruning", "head"))
    url_state.keep("image_pruned", ",".join(chosen))
    return parse_heads(",".join(chosen), model) if chosen else []


def heads_and_accuracy(model, pruned: list) -> None:
    importance, curve = importance_and_curve(ref_of(model), model)
    full = held_out_score(model)
    if pruned:
        after = held_out_score(model, pruned)
        st.markdown(f"Held-out accuracy **{full.accuracy:.1%}** with every head, **{after.accuracy:.1%}** without "
                    f"{format_heads(pruned)} ({after.wrong} of 360 wrong).")
    else:
        st.markdown(f"Held-out accuracy **{full.accuracy:.1%}** ({full.wrong} of 360 wrong). Switch heads off above "
                    "to see what the model loses.")
    layers = list(range(len(importance)))
    heads = list(range(len(importance[0])))
    figure = go.Figure(go.Heatmap(z=importance, x=[f"head {h}" for h in heads], y=[f"layer {layer}" for layer in layers],
                                  colorscale="Blues", text=[[f"{v:.3f}" for v in row] for row in importance],
                                  texttemplate="%{text}", textfont=dict(size=font(13)),
                                  hovertemplate="%{y}, %{x}: importance %{z:.3f}<extra></extra>",
                                  colorbar=dict(title=dict(text="importance", side="right"), thickness=12)))
    figure.update_yaxes(autorange="reversed")
    figure.update_layout(title=dict(text="Head importance on the held-out digits", font=dict(size=font(15))),
                         width=520, height=330, margin=dict(l=10, r=10, t=50, b=10))
    st.caption(f"{linked('head importance', 'Importance')}: how much the loss would change if a head were "
               "switched off, estimated from its gradient (Michel et al. 2019), averaged over the 360 held-out "
               "digits.")
    show_figure(figure, "image-head-importance", pd.DataFrame(importance, index=[f"layer {i}" for i in layers]),
                width="content")
    rows = pd.DataFrame(curve)
    line = go.Figure(go.Scatter(x=rows["pruned"].tolist(), y=rows["accuracy"].tolist(), mode="lines+markers",
                                hovertemplate="%{x} heads pruned: %{y:.1%}<extra></extra>"))
    line.update_layout(title=dict(text="Held-out accuracy as heads are pruned, least important first",
                                  font=dict(size=font(15))),
                       xaxis=dict(title="heads pruned"), yaxis=dict(title="accuracy", tickformat=".0%", range=[0, 1.02]),
                       height=340, margin=dict(l=10, r=10, t=50, b=10))
    show_figure(line, "image-pruning-curve", rows)
