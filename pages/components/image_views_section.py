"""The Images page's views of one digit's trace, one tab at a time: where a token looks (one head), every layer and
head, rollout, the positions' similarity, and the Q, K, V arithmetic of one patch, all on the image's own grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.analyses.internals import qkv_walkthrough
from explorer.analyses.positional import grid_closeness, position_similarity
from explorer.figures.image import (attention_over_image, grid_of, heads_over_image, position_similarity_grid,
                                    rollout_over_image, token_name)
from explorer.figures.walkthrough import scaling_words, walkthrough_figure
from pages.components import url_state
from pages.components.glossary_links import linked, term_help
from pages.components.widgets import show_figure


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
               "digit's outline, so you can see which strokes the head reads. The white frame marks the token "
               "itself when it is a patch.")
    row = trace.pattern("encoder")[layer, head, query]
    show_figure(attention_over_image(trace, layer, head, query), f"image-L{layer}-H{head}-t{query}",
                pd.DataFrame({"token": trace.source_tokens, "weight": row}), width="content")


def every_head(model, trace) -> None:
    query = pick_query(trace, "image_query")
    st.caption("The same token's attention in every layer (rows) and head (columns). Early heads often look at "
               "neighbouring patches; later ones gather the strokes that tell one digit from another.")
    show_figure(heads_over_image(trace, query), f"image-every-head-t{query}", trace.pattern("encoder")[:, :, query],
                width="content")


def rollout(model, trace, live: np.ndarray | None) -> None:
    st.caption(f"{linked('rollout', 'Rollout')} multiplies the layers' head-averaged attention (with the residual "
               "connection) to estimate how much each patch reaches the class token at the top: the part of the "
               "image the classification is built from, by this estimate.")
    show_figure(rollout_over_image(trace, live), "image-rollout", width="content")


def positions(model, trace) -> None:
    if "source" not in trace.positional:
        st.info(f"{model.name} adds its positions inside one module, where the explorer cannot read them apart.")
        return
    st.caption("The model learned one position vector per patch. Each small panel is one patch, placed where it is "
               "on the image; its cells show how similar (cosine) that patch's position vector is to every "
               "other patch's. The ViT paper (Dosovitskiy et al. 2021, figure 7) found that a model trained on "
               "millions of images learns the 2-D layout: nearby patches, and the same row and column, come out "
               "similar.")
    closeness = grid_closeness(position_similarity(trace.positional["source"][1:], cosine=True), grid_of(trace))
    st.markdown(f"In {model.name}: similarity against closeness on the grid, Spearman ρ = **{closeness['rho']:.2f}**; "
                f"neighbouring patches average **{closeness['neighbours']:.2f}**, patches four or more steps apart "
                f"**{closeness['far']:.2f}**.")
    show_figure(position_similarity_grid(trace), "image-position-similarity", trace.positional["source"],
                width="content")


def walkthrough(model, trace) -> None:
    query = pick_query(trace, "image_query")
    layer, head = pick_layer_and_head(model, "image_walk")
    walk = qkv_walkthrough(trace, model, "encoder", layer, head, query)
    keys = trace.source_tokens
    st.caption(f"{linked('query, key, value', 'q')} of {token_name(trace, query)} against every token's k, "
               f"{scaling_words(walk.scaling, model.d_k)}, then softmax: the weights drawn on the first tab. "
               f"{linked('z')} = Σ weight × v.")
    show_figure(walkthrough_figure(walk, keys, keys[query], model.d_k), f"image-walk-L{layer}-H{head}-t{query}",
                pd.DataFrame({"token": keys, "q·k": walk.dots, "scaled": walk.scaled, "softmax": walk.weights}))
