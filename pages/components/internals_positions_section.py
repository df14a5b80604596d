"""The Internals page's "Positions" tab: how word order gets in. Sinusoidal or learned position encodings with
their similarity and what the first layer receives (embedding + position); for a model that adds a learned bias
to its scores by offset (T5), that bias per head; for rotary positions (Llama), the angle each position turns q
and k by (explorer/analyses/sentence/positional.py)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.sentence.positional import bias_by_offset, position_similarity, rotary_angles, sin_cos_halves
from explorer.capture.exports import matrix_table
from explorer.figures.internals import (
    embedding_sum_figure,
    learned_positions_figure,
    positional_encoding_figure,
    relative_bias_figure,
)
from explorer.figures.matrix import VALUES, Matrix, plotly_heatmap
from explorer.figures.rotary import rotary_angles_figure
from explorer.models.vocabulary import ATTENTION_KINDS, KIND_TITLES
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.widgets import show_figure


def relative_bias(checkpoint, trace) -> None:
    """T5 adds no position to its input: every score gets a learned bias by the key's offset from the query."""
    st.caption(f"This model adds no {linked('positional encoding')} to its input. Instead every attention score q·k "
               f"gets a {linked('relative position bias', 'learned bias')} that depends only on the key's offset from "
               "the query (bucketed: exact for small offsets, logarithmic beyond), one value per head, learned in the "
               "first layer and shared by every layer of the stack (Raffel et al. 2020). Cross-attention has none.")
    stack = st.radio("Stack", [k for k in ATTENTION_KINDS if k.is_self and k in trace.attention], key="internals_stack",
                     horizontal=True, format_func=KIND_TITLES.get, help=term_help("relative position bias"))
    length = len(trace.query_tokens(stack))
    bias = checkpoint.position_bias(stack, length, length)
    offsets, values = bias_by_offset(bias.numpy())
    show_figure(relative_bias_figure(offsets, values, f"{stack} self-attention: each head's bias by relative offset"),
                f"{stack}-relative-bias", pd.DataFrame(values, index=[f"head {h}" for h in range(len(values))],
                                                       columns=offsets))


def rotary(checkpoint, trace) -> None:
    """Rotary positions add nothing to the input: every layer turns q and k by an angle that grows with the position."""
    st.caption(f"This model adds no {linked('positional encoding')} to its input: in every layer, "
               f"{linked('rotary positions')} (RoPE) turn each pair of numbers of every head's q and k by an angle "
               "proportional to the token's position, so q·k depends only on how far apart the query and key are "
               "(Su et al. 2021). Fast pairs (left) turn a full circle every few tokens; slow pairs (right) barely "
               "move, and tell far positions apart.")
    kind = next(kind for kind in ATTENTION_KINDS if kind.is_self and kind in trace.attention)
    tokens, frequencies = trace.query_tokens(kind), checkpoint.architecture.rotary_frequencies
    angles = rotary_angles(frequencies, len(tokens))
    show_figure(rotary_angles_figure(angles, frequencies, tokens, f"Rotary angles p·θ of the {len(tokens)} positions "
                                     f"(the model's own θ, {len(frequencies)} pairs a head)"),
                f"{kind}-rotary-angles", matrix_table(angles, tokens, [f"θ={theta:.4g}" for theta in frequencies]))


def position_table(checkpoint, trace, side: str) -> None:
    tokens = trace.source_tokens if side == "source" else trace.target_tokens
    positional = trace.positional[side]
    table = pd.DataFrame(positional, index=[f"{i}:{t}" for i, t in enumerate(tokens)])
    style = checkpoint.architecture.positional
    if style == "learned":
        st.caption("This model learned its position embeddings in training (one row per position, a table it looks "
                   "up), rather than computing them with sines and cosines. Rows shown: the positions of this "
                   "sentence.")
        show_figure(learned_positions_figure(positional, tokens, f"Learned position embeddings of the {len(tokens)} "
                                             f"{side} positions (as the model added them)"),
                    f"{side}-position-embeddings", table)
        similarity = position_similarity(positional, cosine=True)
        title, measure = "Position similarity: cosine(P[i], P[j])", "cosine"
    else:
        where = "Vaswani et al. 2017" if style == "sinusoidal" else "all sines first, then all cosines"
        show_figure(positional_encoding_figure(sin_cos_halves(positional, style), tokens,
                                               f"Sinusoidal PE of the {len(tokens)} {side} positions ({where})",
                                               interleaved=style == "sinusoidal"),
                    f"{side}-positional-encoding", table)
        similarity = position_similarity(positional)
        title, measure = "Position similarity: PE[i] · PE[j]", "dot product"
    show_figure(plotly_heatmap(Matrix(similarity, tokens, tokens, title, VALUES, row_title="position",
                                      column_title="position", value_name=measure)),
                f"{side}-position-similarity", matrix_table(similarity, tokens, tokens))
    show_figure(embedding_sum_figure(trace.embeddings[side], positional, trace.inputs[side], tokens,
                                     "What the first layer receives (as captured inside the model)",
                                     checkpoint.architecture.embedding_steps),
                f"{side}-embedding-plus-pe", {"embedding": trace.embeddings[side], "positional_encoding": positional,
                                              "input": trace.inputs[side]})


def positions(checkpoint, trace) -> None:
    # Rotary positions (Llama) and a learned bias on the scores by offset (T5) have no position table to show.
    if checkpoint.architecture.positional == "rotary":
        rotary(checkpoint, trace)
    elif any(checkpoint.position_bias(kind, 1, 1) is not None for kind in checkpoint.kinds if kind.is_self):
        relative_bias(checkpoint, trace)
    else:
        side = st.radio("Side", list(trace.positional), key="internals_side", horizontal=True,
                        format_func=lambda s: f"{s} ({'encoder' if s == 'source' else 'decoder'} input)",
                        help=term_help("positional encoding", "embedding"))
        position_table(checkpoint, trace, side)
