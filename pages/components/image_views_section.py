"""The Images page's views of one digit's trace, one tab at a time: where a token looks (one head), every layer and
head, rollout, the positions' similarity, and the Q, K, V arithmetic of one patch, all on the image's own grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.analyses.sentence.internals import qkv_walkthrough, walkthrough_table
from explorer.analyses.sentence.positional import grid_closeness, position_similarity
from explorer.figures.image import (
    attention_over_image,
    grid_of,
    heads_over_image,
    position_similarity_grid,
    rollout_over_image,
    token_name,
)
from explorer.figures.walkthrough import scaling_words, walkthrough_figure
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.internals_walkthrough_section import numbers_table
from explorer.pages.components.widgets import colour_scale, show_figure


def pick_query(trace, key: str) -> int:
    """The token whose attention is drawn: the class token (0) or a patch by its place."""
    tokens = trace.source_tokens
    url_state.kept(key, "patch", range(len(tokens)), default=0)
    query = st.selectbox("Token", range(len(tokens)), key=key, format_func=lambda i: token_name(trace, i),
                         help=term_help("class token", "patch"))
    url_state.keep("patch", query)
    return query


def pick_layer_and_head(model, key: str) -> tuple[int, int]:
    left, right = st.columns(2)
    layer = left.selectbox("Layer", range(model.layers("encoder")), key=f"{key}_layer")
    head = right.selectbox("Head", range(model.heads), key=f"{key}_head")
    return layer, head


def one_head(model, trace) -> None:
    query = pick_query(trace, "image_query")
    layer, head = pick_layer_and_head(model, "image_one")
    st.caption("Each square is one patch, coloured by the weight this token gives it; the white line is the "
               "digit's outline and the white frame the token itself, when it is a patch. In layer 0 each token is "
               "still its own patch; in later layers a token has already mixed in others (see Rollout), so a square "
               "marks where that token started, not only its pixels.")
    row = trace.pattern("encoder")[layer, head, query]
    show_figure(attention_over_image(trace, layer, head, query, colour_scale()), f"image-L{layer}-H{head}-t{query}",
                pd.DataFrame({"token": trace.source_tokens, "weight": row}), width="content")


def every_head(model, trace) -> None:
    query = pick_query(trace, "image_query")
    st.caption("The same token's attention in every layer (rows) and head (columns). The ViT paper (figure 7, "
               "right) found that in the first layers some heads already look across the whole image while others "
               "stay local, and that heads look further as the layers go up. For a patch, compare the white frame "
               "with the bright squares. The sidebar's Attention colours sets the scale.")
    show_figure(heads_over_image(trace, query, colour_scale()), f"image-every-head-t{query}",
                trace.pattern("encoder")[:, :, query], width="content")


def rollout(model, trace, live: np.ndarray | None) -> None:
    st.caption(f"{linked('rollout', 'Rollout')} multiplies the layers' head-averaged attention (with the residual "
               "connection) to estimate how much each patch reaches the class token at the top: the part of the "
               "image the classification is built from, by this estimate. The ViT paper draws its attention maps "
               "this way (figure 6); it ignores the values and the feed-forward layers, so it is an estimate.")
    show_figure(rollout_over_image(trace, live), "image-rollout", width="content")


def positions(model, trace) -> None:
    if "source" not in trace.positional:
        st.info(f"{model.name} adds its positions inside one module, where the explorer cannot read them apart.")
        return
    st.caption("The model was given only the patches' order (1, 2, … 16), not their rows and columns: one learned "
               "position vector per token. Each small panel is one patch, placed where it is on the image; its "
               "cells show how similar (cosine) that patch's position vector is to every other patch's, and its "
               "darkest cell is the patch itself (always 1). The ViT paper (Dosovitskiy et al. 2021, figure 7, "
               "centre: ViT-L/32 pre-trained on 300 million images) found that the table learns the 2-D layout: "
               "nearby patches, and the same row and column, come out similar.")
    closeness = grid_closeness(position_similarity(trace.positional["source"][1:], cosine=True), grid_of(trace))
    st.markdown(f"In {model.name}: Spearman ρ = **{closeness['rho']:.2f}** between two patches' similarity and their "
                f"closeness (steps along rows and columns). Positive means nearer patches got more similar position "
                f"vectors: the model learned that much of the layout without being told it. Neighbours average "
                f"**{closeness['neighbours']:.2f}**, patches four or more steps apart **{closeness['far']:.2f}**.")
    show_figure(position_similarity_grid(trace), "image-position-similarity", trace.positional["source"],
                width="content")


def walkthrough(model, trace) -> None:
    query = pick_query(trace, "image_query")
    layer, head = pick_layer_and_head(model, "image_walk")
    walk = qkv_walkthrough(model, trace, "encoder", layer, head, query)
    keys = trace.source_tokens
    st.caption(f"{linked('query, key, value', 'q')} of {token_name(trace, query)} against every token's k, "
               f"{scaling_words(walk.scaling, model.d_k)}, then softmax: the weights drawn over the digit on the One "
               f"head tab. {linked('z')} = Σ weight × v; then every head's z, concatenated, times W_O.")
    st.markdown("**q** (query vector)")
    numbers_table(pd.DataFrame([walk.q], index=["q"]), "image_walk_q")
    show_figure(walkthrough_figure(walk, keys, keys[query], model.d_k), f"image-walk-L{layer}-H{head}-t{query}",
                pd.DataFrame({"token": keys, "q·k": walk.dots, "scaled": walk.scaled, "softmax": walk.weights}))
    st.markdown("**k and v of every token, the weights, and weight × v** (rows: tokens)")
    numbers_table(walkthrough_table(walk, keys), "image_walk_kv")
    st.markdown(f"**z = Σ weight × v** for head {head}; every head's z concatenated, times W_O (+ bias): the "
                "block's output", help=term_help("z", "W_O"))
    numbers_table(pd.DataFrame([pd.Series(walk.z), pd.Series(walk.concatenated), pd.Series(walk.output)],
                               index=["z", "concat(z_1…z_h)", "· W_Oᵀ + b"]), "image_walk_out")
