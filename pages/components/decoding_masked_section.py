"""The Decoding page for a masked language model (BERT), which does not decode: one token hidden behind the mask
token, what the model fills in, where the mask looked, which heads carried the prediction, and the logit lens at
the mask (pages/components/lens_and_sampling.py)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.capture.decoding_steps import maskable_positions
from explorer.figures.candidates import candidates_table
from explorer.figures.common import display_tokens
from explorer.figures.decoding import attention_row_described, head_effect_figure, plotly_bars
from explorer.figures.token_bars import html_bars
from explorer.pages.components import url_state
from explorer.pages.components.caches import cached_masked_word
from explorer.pages.components.decoding_step_section import side_by_side
from explorer.pages.components.glossary_links import linked
from explorer.pages.components.lens_and_sampling import masked_lens_section
from explorer.pages.components.session import ref_of, selection
from explorer.pages.components.widgets import figure_places, show_figure, show_table_figure


def masked_token_view(checkpoint, trace) -> None:
    """A masked language model does not decode: hide one token behind the mask token and see what it fills in,
    and which heads carried it."""
    st.caption(f"A {linked('masked language model')} does not generate text: it fills in masked tokens. Pick a token to hide "
               "behind the mask token; the model predicts it from the rest of the sentence.")
    positions = maskable_positions(checkpoint, trace)
    if not positions:
        st.info("This sentence has no token to mask.")
        return
    left, right = st.columns(2)
    url_state.kept("decoding_mask_position", "mask", positions, default=positions[len(positions) // 2])
    position = left.selectbox("Token to mask", positions, key="decoding_mask_position", persist_state="session",
                              format_func=lambda i: f"{i}: {trace.source_tokens[i]}")
    url_state.keep("mask", position)
    encoder_layers = range(checkpoint.layers("encoder"))
    url_state.kept("decoding_mask_layer", None, encoder_layers, default=encoder_layers[-1])
    layer = right.selectbox("Layer", encoder_layers, key="decoding_mask_layer", persist_state="session")
    masked = cached_masked_word(ref_of(checkpoint), selection().sentence,
                                position, selection().fix_casing)
    row = masked.attention[layer].mean(0)
    title, details = "where the mask looked", [f"layer {layer}, head average"]
    left, right = figure_places(2, side_by_side(masked.prediction, len(masked.tokens)))
    with left:      # a ranked list, not a plot (explorer/figures/candidates.py)
        show_table_figure(candidates_table(masked.prediction, position, "masked"), f"mask-{position}-predictions",
                          pd.DataFrame({"token": masked.prediction.top_tokens, "probability": masked.prediction.top_probs}),
                          width="content")
    with right:
        described = attention_row_described(row, masked.tokens, title, details)
        show_table_figure(html_bars(described), f"mask-{position}-attention",
                          pd.DataFrame({"token": masked.tokens, "weight": row}),
                          interactive=lambda: plotly_bars(described))
    layers = [f"layer {i}" for i in range(masked.head_effect.shape[0])]
    heads = [f"head {i}" for i in range(masked.head_effect.shape[1])]
    st.caption("Which heads carried the prediction: |∂ log p(hidden token) / ∂ gate| of each head (Michel et al. "
               f"2019's {linked('head importance', 'importance')}, for this one example). Large = the prediction moves "
               "most when that head is turned down.")
    title = f"Heads behind predicting “{display_tokens([masked.prediction.chosen])[0]}”"
    show_figure(head_effect_figure(masked.head_effect, title),
                f"mask-{position}-heads", pd.DataFrame(masked.head_effect, index=layers, columns=heads))
    masked_lens_section(checkpoint, trace, position)
