"""The Decoding page's "One step": at a step of the output, the candidates' probabilities (top-k) beside where the
model looked while choosing (cross-attention, or self-attention over the text so far) in a layer and head."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.capture.decoding_steps import step_attention_row
from explorer.capture.trace import StepDistribution
from explorer.figures.candidates import candidates_table, candidates_width
from explorer.figures.decoding import HALF_COLUMN, attention_row_described, bars_fit_half_column, plotly_bars
from explorer.figures.token_bars import html_bars
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.widgets import figure_places, show_table_figure


def side_by_side(candidates: StepDistribution, bars: int) -> bool:
    """The candidates and the bars fit beside each other while the list fits half a projector's column and the
    bars (one a token) fit there on one line."""
    return candidates_width(candidates) <= HALF_COLUMN and bars_fit_half_column(bars)


def show_one_step(checkpoint, trace) -> None:
    st.header("One step", help=term_help("logits", "softmax", "entropy"))
    looked_at = trace.step_kind
    keys = trace.key_tokens(looked_at)
    picker, layer_picker, head_picker = st.columns([2, 1, 1])
    if len(trace.steps) > 1:
        url_state.kept("decoding_step", "step", range(len(trace.steps)), default=0, tokens=trace.output_tokens)
        step_index = picker.slider("Step", 0, len(trace.steps) - 1, key="decoding_step", persist_state="session")
        url_state.keep("step", step_index)
    else:
        step_index = 0
    step = trace.steps[step_index]
    layers = range(checkpoint.layers("decoder"))
    url_state.kept("decoding_layer", None, layers, default=layers[-1])
    layer = layer_picker.selectbox("Self-attention layer" if looked_at.is_self else "Cross-attention layer", layers,
                                   key="decoding_layer", persist_state="session",
                                   help=term_help("self-attention" if looked_at.is_self else "cross-attention"))
    head_choices = ["average"] + list(range(checkpoint.heads))
    url_state.kept("decoding_head", None, head_choices, default="average")
    head_choice = head_picker.selectbox("Head", head_choices, key="decoding_head", persist_state="session",
                                        help=term_help("head", "head average"))
    row = step_attention_row(trace, layer, step_index, None if head_choice == "average" else head_choice)
    what = "self-attention over the text so far" if looked_at.is_self else "cross-attention"
    title, details = f"step {step_index}: where it looked", [what, f"layer {layer}, head {head_choice}"]
    # Beside each other while the bars fit half the page; a bar for each of many tokens takes the page's width.
    left, right = figure_places(2, side_by_side(step, len(keys)))
    with left:      # a ranked list, not a plot (explorer/figures/candidates.py)
        show_table_figure(candidates_table(step, step_index), f"step-{step_index}-top-k",
                          pd.DataFrame({"token": step.top_tokens, "probability": step.top_probs}), width="content")
    with right:
        described = attention_row_described(row, keys, title, details)
        show_table_figure(html_bars(described), f"step-{step_index}-attention",
                          pd.DataFrame({"token": keys, "weight": row}),
                          interactive=lambda: plotly_bars(described))
