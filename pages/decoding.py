"""Decoding step by step: top-k, entropy and what each step looked at; greedy vs beam; teacher forcing.
For an encoder-only model (BERT): the masked-token view instead."""

import pandas as pd
import streamlit as st

from explorer.decoding_steps import (beam_steps_table, finished_table, maskable_positions, step_attention_row,
                                     steps_table, stopping_reason, teacher_forcing, teacher_forcing_table)
from explorer.figures.decoding import (attention_row_figure, beam_tree_figure, step_figure, steps_overview,
                                       teacher_forcing_figure)
from explorer.figures.internals import matrix_heatmap
from explorer.inputs import InputError
from models.interface import FILL_MASK
from pages.session import cached_beam_tree, cached_masked_word, current_trace, selection, weights_mtime
from pages.widgets import show_figure

st.title("Decoding")   # first: the notices about the sentence go under it
checkpoint, trace = current_trace()


def masked_token_view() -> None:
    """A masked language model does not decode: hide one token behind the mask token and see what it fills in,
    and which heads carried it."""
    st.caption("A masked language model does not generate text: it fills in masked tokens. Pick a token to hide "
               "behind the mask token; the model predicts it from the rest of the sentence.")
    positions = maskable_positions(trace, checkpoint)
    if not positions:
        st.info("This sentence has no token to mask.")
        return
    position = st.selectbox("Token to mask", positions, index=len(positions) // 2, key="decoding_mask_position",
                            format_func=lambda i: f"{i}: {trace.source_tokens[i]}")
    masked = cached_masked_word(str(checkpoint.path), weights_mtime(str(checkpoint.path)), selection().sentence,
                                position, selection().fix_casing)
    left, right = st.columns(2)
    with left:
        show_figure(step_figure(masked.prediction, position, "masked"), f"mask-{position}-predictions",
                    pd.DataFrame({"token": masked.prediction.top_tokens, "probability": masked.prediction.top_probs}))
    with right:
        layer = st.selectbox("Layer", range(checkpoint.layers("encoder")), index=checkpoint.layers("encoder") - 1,
                             key="decoding_mask_layer")
        row = masked.attention[layer].mean(0)
        show_figure(attention_row_figure(row, masked.tokens, f"where the mask looked: layer {layer}, head average"),
                    f"mask-{position}-attention", pd.DataFrame({"token": masked.tokens, "weight": row}))
    layers = [f"layer {i}" for i in range(masked.head_effect.shape[0])]
    heads = [f"head {i}" for i in range(masked.head_effect.shape[1])]
    st.caption("Which heads carried the prediction: |∂ log p(hidden token) / ∂ gate| of each head (Michel et al. "
               "2019's importance, for this one example). Large = the prediction moves most when that head is "
               "turned down.")
    title = f"Heads behind predicting “{masked.prediction.chosen}”"
    show_figure(matrix_heatmap(masked.head_effect, layers, heads, title,
                               "|gradient|", row_title="layer", column_title="head", diverging=False,
                               show_text=masked.head_effect.size <= 64),
                f"mask-{position}-heads", pd.DataFrame(masked.head_effect, index=layers, columns=heads))


if checkpoint.task == FILL_MASK:
    masked_token_view()
    st.stop()

st.caption(f"Decoding: {trace.decoding}. Output: {len(trace.steps)} steps. {stopping_reason(trace, checkpoint)}")
show_figure(steps_overview(trace.steps), "decoding-steps", steps_table(trace))

st.header("One step")
step_index = st.slider("Step", 0, len(trace.steps) - 1, 0, key="decoding_step") if len(trace.steps) > 1 else 0
step = trace.steps[step_index]
looked_at = "cross" if "cross" in trace.attention else "decoder"
keys = trace.source_tokens if looked_at == "cross" else trace.target_tokens
left, right = st.columns(2)
with left:
    show_figure(step_figure(step, step_index), f"step-{step_index}-top-k",
                pd.DataFrame({"token": step.top_tokens, "probability": step.top_probs}))
with right:
    layer = st.selectbox("Cross-attention layer" if looked_at == "cross" else "Self-attention layer",
                         range(checkpoint.layers("decoder")), index=checkpoint.layers("decoder") - 1, key="decoding_layer")
    head_choice = st.selectbox("Head", ["average"] + list(range(checkpoint.heads)), key="decoding_head")
    row = step_attention_row(trace, layer, step_index, None if head_choice == "average" else head_choice)
    what = "cross-attention" if looked_at == "cross" else "self-attention over the text so far"
    show_figure(attention_row_figure(row, keys, f"step {step_index}: {what}, layer {layer}, head {head_choice}"),
                f"step-{step_index}-attention", pd.DataFrame({"token": keys, "weight": row}))

st.header("Greedy versus beam search")
beam_size = st.slider("Beam size", 2, 10, max(2, selection().beam_size if selection().beam_size > 1 else 5),
                      key="decoding_beam")
alpha = st.slider("Length penalty α", 0.0, 2.0, 0.6, 0.1, key="decoding_alpha",
                  help="Hypotheses are ranked by log-probability ÷ ((5 + length) / 6)^α (GNMT).")
st.caption("The tree is the explorer's beam search over this model's next-token probabilities, so every live beam "
           "can be drawn; the output on the other pages comes from the model's own decoding.")
result = cached_beam_tree(str(checkpoint.path), weights_mtime(str(checkpoint.path)), trace.text, beam_size, alpha,
                          checkpoint.target_language)
show_figure(beam_tree_figure(result, checkpoint.pieces), f"beam-{beam_size}-tree",
            beam_steps_table(result, checkpoint.pieces))
st.markdown("**Finished hypotheses** (best first)")
st.table(finished_table(result, checkpoint.detokenize).style.format({"log-prob": "{:.3f}", "score": "{:.3f}"}))   # a table wraps long hypotheses
st.caption(f"The output shown on the other pages ({trace.decoding}):")
st.text(trace.output_text)

st.header("Teacher forcing")
continuation = looked_at == "decoder"
reference = st.text_input("A continuation of your text" if continuation else "A reference translation",
                          key="decoding_reference",
                          placeholder="Type the words you expect next" if continuation
                          else "Type the translation you expect")
if reference.strip():
    try:
        forced = teacher_forcing(checkpoint, trace.text, reference)
    except InputError as error:
        st.info(str(error))
    else:
        show_figure(teacher_forcing_figure(forced), "teacher-forcing", teacher_forcing_table(forced))
        st.metric("Loss (mean negative log-likelihood per token)", f"{forced.loss:.3f} nats")
