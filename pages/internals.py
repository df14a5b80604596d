"""Internals: the masks, scores → masked scores → softmax, positional encodings, and the Q/K/V arithmetic."""

import pandas as pd
import streamlit as st

from explorer.analyses.internals import (batch_padding_mask, batch_partner, default_query, masked_scores, qkv_walkthrough,
                                walkthrough_table)
from explorer.analyses.positional import bias_by_offset, position_similarity, sin_cos_halves
from explorer.figures.internals import (embedding_sum_figure, learned_positions_figure, mask_heatmap, matrix_heatmap,
                                        positional_encoding_figure, relative_bias_figure, scores_mask_softmax,
                                        scaling_words, walkthrough_figure)
from explorer.capture.exports import matrix_table
from explorer.figures.common import plural
from pages.components.glossary_links import linked, term_help
from pages.components.session import EXAMPLES, current_trace, pruning_notice
from pages.components import url_state
from pages.components.widgets import choose_head, colour_scale, one_tab_at_a_time, show_figure
from models.vocabulary import KIND_TITLES

st.title("Internals")   # first: the notices about the sentence go under it
st.caption("How one head turns its input into attention weights, one step at a time: which keys the masks allow, how "
           "scores become weights, how word order gets in, and the arithmetic for one query token.",
           help=term_help("scaled dot-product attention"))
checkpoint, trace = current_trace()
pruning_notice(checkpoint)
KINDS = tuple(trace.attention)


def pick(whole_kind: bool = False) -> tuple[str, int, int, list[str], list[str]]:
    """The attention kind (and, unless the tab shows a whole kind, the layer and head) on the tabs that use them,
    in the Attention page's order, opening on the encoder as it does; with the kind's query and key tokens."""
    kind, layer, head = choose_head(checkpoint, "internals", first_kind="encoder", kinds=KINDS,
                                    pick_head=not whole_kind)
    return kind, layer, head, trace.query_tokens(kind), trace.key_tokens(kind)


def masks() -> None:
    kind, _, _, queries, keys = pick(whole_kind=True)
    st.caption(f"True (1) = may attend. The {linked('padding mask')} hides padding keys when sentences of different "
               f"lengths share a batch; the {linked('look-ahead mask')} lets decoder position i see positions ≤ i "
               "only. A single sentence has no "
               "padding, so its padding mask is all ones; the look-ahead mask is lower-triangular.")
    mask = trace.masks[kind]
    if mask.all():
        # An all-ones mask drawn is one flat colour: it reads as a figure that failed, so it is said instead.
        st.info(f"No mask here: every key is visible. In {KIND_TITLES[kind].lower()} each of the {len(queries)} "
                f"queries may attend to all {len(keys)} keys: a single sentence has no padding"
                + (", and only the decoder's self-attention has a look-ahead mask." if "decoder" in KINDS else "."))
    else:
        show_figure(mask_heatmap(mask, queries, keys, f"{kind} mask (as captured from the model)"), f"{kind}-mask",
                    matrix_table(mask.astype(int), queries, keys))

    partner = batch_partner(checkpoint, trace.text, EXAMPLES + [
        "A man in a blue shirt and a woman in a red dress are dancing together at a wedding party.", "A dog runs."])
    if partner is not None:
        padding, pieces = batch_padding_mask(checkpoint, [trace.text, partner])
        yours_padded = not padding[0].all()
        padded = 0 if yours_padded else 1             # the row that gets the pads
        names = ["your sentence", "a longer sentence" if yours_padded else "a shorter sentence"]
        title = ("Padding mask of a batch: your sentence padded to a longer one's length" if yours_padded
                 else "Padding mask of a batch: a shorter sentence padded to your sentence's length")
        show_figure(mask_heatmap(padding, names, [], title, row_title="sentence",
                                 column_title="key position (hover: each sentence's own piece)", row_pieces=pieces),
                    "padding-mask", pd.DataFrame(padding.astype(int), index=names))
        pads = [i for i, ok in enumerate(padding[padded]) if not ok]       # the end of the row
        where = f"position {pads[0]}" if len(pads) == 1 else f"positions {pads[0]}–{pads[-1]}"
        st.caption(f"In {names[padded]}, the pads ({where}) get mask 0: every query's attention to them is exactly 0.")


def scores_to_softmax() -> None:
    kind, layer, head, queries, keys = pick()
    if trace.masks[kind].all():         # no blank "+ mask" panel: said in words
        st.caption(f"Left to right: each query's {linked('scaled dot-product attention', 'scaled scores')} q·k for "
                   f"every key and the {linked('softmax')} that turns each row into attention weights summing to 1. "
                   f"No {linked('mask')} here: every key is visible, so softmax reads the scores as they are.")
    else:
        st.caption(f"Left to right: each query's {linked('scaled dot-product attention', 'scaled scores')} q·k for "
                   f"every key, the {linked('mask')} (−∞ where a key is hidden), their sum, and the "
                   f"{linked('softmax')} that turns each row into attention weights summing to 1.")
    scores = trace.attention[kind]["scores"][layer, head]
    pattern = trace.pattern(kind)[layer, head]
    show_figure(scores_mask_softmax(scores, trace.masks[kind], pattern, queries, keys,
                                    f"{kind}, layer {layer}, head {head}: the model's real numbers", colour_scale()),
                f"{kind}-L{layer}-H{head}-scores-mask-softmax",
                {"scores": scores, "mask": trace.masks[kind], "masked_scores": masked_scores(trace, kind, layer, head),
                 "pattern": pattern})


def relative_bias() -> None:
    """T5 adds no position to its input: every score gets a learned bias by the key's offset from the query."""
    st.caption(f"This model adds no {linked('positional encoding')} to its input. Instead every attention score q·k "
               f"gets a {linked('relative position bias', 'learned bias')} that depends only on the key's offset from "
               "the query (bucketed: exact for small offsets, logarithmic beyond), one value per head, learned in the "
               "first layer and shared by every layer of the stack (Raffel et al. 2020). Cross-attention has none.")
    stack = st.radio("Stack", [k for k in ("encoder", "decoder") if k in KINDS], key="internals_stack",
                     horizontal=True, format_func=KIND_TITLES.get, help=term_help("relative position bias"))
    length = len(trace.query_tokens(stack))
    bias = checkpoint.position_bias(stack, length, length)
    offsets, values = bias_by_offset(bias.numpy())
    show_figure(relative_bias_figure(offsets, values, f"{stack} self-attention: each head's bias by relative offset"),
                f"{stack}-relative-bias", pd.DataFrame(values, index=[f"head {h}" for h in range(len(values))],
                                                       columns=offsets))


def position_table(side: str) -> None:
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
    show_figure(matrix_heatmap(similarity, tokens, tokens, title, measure, row_title="position",
                               column_title="position", diverging=False),
                f"{side}-position-similarity", matrix_table(similarity, tokens, tokens))
    show_figure(embedding_sum_figure(trace.embeddings[side], positional, trace.inputs[side], tokens,
                                     "What the first layer receives (as captured inside the model)",
                                     checkpoint.architecture.embedding_steps),
                f"{side}-embedding-plus-pe", {"embedding": trace.embeddings[side], "positional_encoding": positional,
                                              "input": trace.inputs[side]})


def positions() -> None:
    # A model that adds a learned bias to its scores by offset (T5) has no position table to show: its bias instead.
    if any(checkpoint.position_bias(kind, 1, 1) is not None for kind in ("encoder", "decoder") if checkpoint.has(kind)):
        relative_bias()
    else:
        side = st.radio("Side", list(trace.positional), key="internals_side", horizontal=True,
                        format_func=lambda s: f"{s} ({'encoder' if s == 'source' else 'decoder'} input)",
                        help=term_help("positional encoding", "embedding"))
        position_table(side)


def numbers_table(table: pd.DataFrame, key: str) -> None:
    """A table of numbers to 3 decimals, formatted in the browser: pandas' Styler, formatting on the server, took
    ~60% of the Q, K, V tab's run on h8 at 45 words (py-spy), and 1.3 s for 500 keys × 193 columns."""
    table = table.rename(columns=str)
    st.dataframe(table, key=key, column_config={column: st.column_config.NumberColumn(format="%.3f")
                                                for column in table.columns})


def walkthrough() -> None:
    kind, layer, head, queries, keys = pick()
    # Default to a query in the middle of the sentence: the decoder's first query (<s>) sees one key, so its
    # softmax is trivially 1 and shows nothing of the arithmetic.
    url_state.kept("internals_query", "query", range(len(queries)))
    query = st.selectbox("Query token", range(len(queries)), index=default_query(queries),
                         format_func=lambda i: f"{i}: {queries[i]}", key="internals_query")
    url_state.keep("query", query)
    walk = qkv_walkthrough(trace, checkpoint, kind, layer, head, query)
    st.caption(f"{linked('d_k')} = {checkpoint.d_k}. {linked('query, key, value', 'q')} is the query token's vector "
               f"for head {head}; each key token has a k and a v. "
               f"Score = q·k {scaling_words(walk.scaling, checkpoint.d_k)}"
               f"{' + the relative position bias of its offset' if walk.biased else ''}; masked keys get −∞; softmax "
               f"gives the weights; {linked('z')} = Σ weight × v.")
    st.markdown("**q** (query vector)")
    numbers_table(pd.DataFrame([walk.q], index=["q"]), "walk_q")
    show_figure(walkthrough_figure(walk, keys, queries[query], checkpoint.d_k), f"{kind}-L{layer}-H{head}-q{query}-walkthrough",
                pd.DataFrame({"key": keys, "q·k": walk.dots, "scaled": walk.scaled, "masked": walk.masked,
                              "softmax": walk.weights}))
    st.markdown("**k and v of every key, the weights, and weight × v** (rows: keys)")
    numbers_table(walkthrough_table(walk, keys), "walk_kv")
    st.markdown(f"**z = Σ weight × v** for head {head}, then the {plural(checkpoint.heads, 'head')}' z concatenated "
                f"({checkpoint.heads} × {checkpoint.d_k} = {len(walk.concatenated)} numbers) times W_O (+ bias): the "
                f"block's output ({len(walk.output)} numbers).", help=term_help("z", "W_O"))
    numbers_table(pd.DataFrame([walk.z], index=["z"]), "walk_z")
    # T5's heads × d_k need not be d_model: rows of two lengths, the shorter padded (Series align on their index)
    numbers_table(pd.DataFrame([pd.Series(walk.concatenated), pd.Series(walk.output)],
                               index=["concat(z_1…z_h)", "· W_Oᵀ + b"]), "walk_out")


# One part at a time, like the Attention page's views: only the open tab runs and is drawn, so a long sentence
# opens in well under the seven figures' time; the tab is kept in the URL (`part=`).
PARTS = {"Masks": masks, "Scores → softmax": scores_to_softmax, "Positions": positions,
         "Q, K, V walkthrough": walkthrough}
one_tab_at_a_time(PARTS, "internals_part", "part")
