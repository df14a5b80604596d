"""Decoding step by step: top-k, entropy and what each step looked at; sampling; the logit lens; greedy vs beam;
teacher forcing.
For an encoder-only model (BERT): the masked-token view instead."""

import pandas as pd
import streamlit as st

from explorer.capture.decoding_steps import (beam_steps_table, finished_table, maskable_positions, step_attention_row,
                                     steps_table, stopping_reason, teacher_forcing, teacher_forcing_table)
from explorer.figures.common import display_tokens
from explorer.figures.decoding import (attention_row_figure, bars_fit_half_column, beam_tree_figure, fixed_width,
                                       head_effect_figure, step_figure, steps_overview, teacher_forcing_figure)
from explorer.capture.inputs import InputError
from models.interface import FILL_MASK
from pages.components.lens_and_sampling import logit_lens_section, masked_lens_section, sampling_section
from pages.components.session import (cached_beam_tree, cached_masked_word, current_trace, pruning_notice, selection, view_pruned,
                           weights_mtime)
from pages.components import url_state
from pages.components.glossary_links import linked, term_help
from pages.components.widgets import figure_places, show_figure

# The beam tree's work (beams × steps × decoder tokens × decoder layers × d_model², ∝ its multiply-adds) drawn
# without asking: the bundled models' 45-token caption with 10 beams ~4e9, their 250-token text ~1.3e9 (they
# translate it in ~36 tokens); GPT-2 small (12 × 768) on a 500-token prompt ~6e11 (many minutes on one thread).
BEAM_WORK = 10e9

st.title("Decoding")   # first: the notices about the sentence go under it
st.caption("How the model picks each token it writes: the probabilities it gave the candidates at every step, where "
           "it looked while choosing, and how other ways of choosing (sampling, beam search) change the output.")
checkpoint, trace = current_trace()
if checkpoint.task == FILL_MASK:
    pruning_notice(checkpoint, "full", "the masked-token view fills the mask with the model as trained.")
else:
    pruning_notice(checkpoint)
pruned = view_pruned(checkpoint)


def side_by_side(left_figure, right_figure, bars: int) -> bool:
    """Two figures fit beside each other while neither needs a width of its own and the right one's bars (one a
    token) keep their labels apart in half a projector's column."""
    return not (left_figure.layout.width or right_figure.layout.width) and bars_fit_half_column(bars)


def masked_token_view() -> None:
    """A masked language model does not decode: hide one token behind the mask token and see what it fills in,
    and which heads carried it."""
    st.caption(f"A {linked('masked language model')} does not generate text: it fills in masked tokens. Pick a token to hide "
               "behind the mask token; the model predicts it from the rest of the sentence.")
    positions = maskable_positions(trace, checkpoint)
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
    masked = cached_masked_word(str(checkpoint.path), weights_mtime(str(checkpoint.path)), selection().sentence,
                                position, selection().fix_casing)
    row = masked.attention[layer].mean(0)
    predictions = step_figure(masked.prediction, position, "masked")
    looked = attention_row_figure(row, masked.tokens, "where the mask looked", [f"layer {layer}, head average"])
    left, right = figure_places(2, side_by_side(predictions, looked, len(masked.tokens)))
    with left:
        show_figure(predictions, f"mask-{position}-predictions",
                    pd.DataFrame({"token": masked.prediction.top_tokens, "probability": masked.prediction.top_probs}))
    with right:
        show_figure(looked, f"mask-{position}-attention", pd.DataFrame({"token": masked.tokens, "weight": row}),
                    width=fixed_width(looked))
    layers = [f"layer {i}" for i in range(masked.head_effect.shape[0])]
    heads = [f"head {i}" for i in range(masked.head_effect.shape[1])]
    st.caption("Which heads carried the prediction: |∂ log p(hidden token) / ∂ gate| of each head (Michel et al. "
               f"2019's {linked('head importance', 'importance')}, for this one example). Large = the prediction moves most when that head is "
               "turned down.")
    title = f"Heads behind predicting “{display_tokens([masked.prediction.chosen])[0]}”"
    show_figure(head_effect_figure(masked.head_effect, title),
                f"mask-{position}-heads", pd.DataFrame(masked.head_effect, index=layers, columns=heads))
    masked_lens_section(checkpoint, trace, position)


if checkpoint.task == FILL_MASK:
    masked_token_view()
    st.stop()

st.caption(f"Decoding: {trace.decoding}. Output: {len(trace.steps)} steps. {stopping_reason(trace, checkpoint)}",
           help=term_help("greedy decoding", "beam search", "entropy", "nats"))
overview = steps_overview(trace.steps)
show_figure(overview, "decoding-steps", steps_table(trace), width=fixed_width(overview))

st.header("One step", help=term_help("logits", "softmax", "entropy"))
looked_at = "cross" if "cross" in trace.attention else "decoder"
keys = trace.source_tokens if looked_at == "cross" else trace.target_tokens
picker, layer_picker, head_picker = st.columns([2, 1, 1])
if len(trace.steps) > 1:
    url_state.kept("decoding_step", "step", range(len(trace.steps)), default=0)
    step_index = picker.slider("Step", 0, len(trace.steps) - 1, key="decoding_step", persist_state="session")
    url_state.keep("step", step_index)
else:
    step_index = 0
step = trace.steps[step_index]
layers = range(checkpoint.layers("decoder"))
url_state.kept("decoding_layer", None, layers, default=layers[-1])
layer = layer_picker.selectbox("Cross-attention layer" if looked_at == "cross" else "Self-attention layer", layers,
                               key="decoding_layer", persist_state="session",
                               help=term_help("cross-attention" if looked_at == "cross" else "self-attention"))
head_choices = ["average"] + list(range(checkpoint.heads))
url_state.kept("decoding_head", None, head_choices, default="average")
head_choice = head_picker.selectbox("Head", head_choices, key="decoding_head", persist_state="session",
                                    help=term_help("head", "head average"))
row = step_attention_row(trace, layer, step_index, None if head_choice == "average" else head_choice)
what = "cross-attention" if looked_at == "cross" else "self-attention over the text so far"
top_k = step_figure(step, step_index)
looked = attention_row_figure(row, keys, f"step {step_index}: where it looked",
                              [what, f"layer {layer}, head {head_choice}"])
# Beside each other while the bars fit half the page; a bar for each of many tokens takes the page's width.
left, right = figure_places(2, side_by_side(top_k, looked, len(keys)))
with left:
    show_figure(top_k, f"step-{step_index}-top-k",
                pd.DataFrame({"token": step.top_tokens, "probability": step.top_probs}))
with right:
    show_figure(looked, f"step-{step_index}-attention", pd.DataFrame({"token": keys, "weight": row}),
                width=fixed_width(looked))

sampling_section(checkpoint, trace)
logit_lens_section(checkpoint, trace)

st.header("Greedy versus beam search", help=term_help("greedy decoding", "beam search"))
url_state.kept("decoding_beam", None, range(2, 11), default=max(2, selection().beam_size if selection().beam_size > 1 else 5))
beam_size = st.slider("Beam size", 2, 10, key="decoding_beam", persist_state="session",
                      help="How many partial outputs the search keeps at every step.")
if not 0.0 <= st.session_state.get("decoding_alpha", -1) <= 2.0:        # a slider's float: a range, not a list
    st.session_state["decoding_alpha"] = 0.6
alpha = st.slider("Length penalty α", 0.0, 2.0, step=0.1, key="decoding_alpha", persist_state="session",
                  help="Hypotheses are ranked by log-probability ÷ ((5 + length) / 6)^α (GNMT). "
                       f"({linked('length penalty', 'glossary')})")
st.caption("The tree is the explorer's beam search over this model's next-token probabilities, so every live beam "
           "can be drawn; the output on the other pages comes from the model's own decoding.")


def beam_tree_wanted() -> bool:
    """The tree's search runs the decoder over its whole input again at every step for every beam: cheap for a
    translation's few dozen tokens, minutes for a 500-token prompt (a decoder-only model reads the prompt at
    every step). Past BEAM_WORK it waits for a button, and says why; once asked for, it stays."""
    layers, tokens, steps = checkpoint.layers("decoder"), len(trace.target_tokens), max(len(trace.steps), 1)
    work = beam_size * steps * tokens * layers * checkpoint.d_model ** 2      # ∝ the multiply-adds
    asked = f"beam_asked:{checkpoint.path}|{trace.text}|{beam_size}|{alpha}"
    if work <= BEAM_WORK or st.session_state.get(asked):
        return True
    st.info(f"The beam tree is slow for this model at this length, so it waits for you: each of its up to {steps} "
            f"steps runs the decoder's {layers} layers (d_model {checkpoint.d_model}) over all {tokens} tokens "
            f"again for each of the {beam_size} beams: about {work / 1e9:,.0f} billion multiply-adds, where the tree "
            f"is drawn without asking up to about {BEAM_WORK / 1e9:.0f} billion (a few seconds).")
    if st.button(f"Run beam search ({beam_size} beams)", key="decoding_run_beam"):
        st.session_state[asked] = True
        return True
    return False


if beam_tree_wanted():
    result = cached_beam_tree(str(checkpoint.path), weights_mtime(str(checkpoint.path)), trace.text, beam_size,
                              alpha, checkpoint.target_language, pruned)
    # At its own width: every rank a column as wide as its labels need.
    show_figure(beam_tree_figure(result, checkpoint.pieces), f"beam-{beam_size}-tree",
                beam_steps_table(result, checkpoint.pieces), width="content")
    st.markdown("**Finished hypotheses** (best first)")
    st.table(finished_table(result, checkpoint.detokenize).style.format({"log-prob": "{:.3f}", "score": "{:.3f}"}))   # a table wraps long hypotheses
st.caption(f"The output shown on the other pages ({trace.decoding}):")
st.text(trace.output_text)

st.header("Teacher forcing", help=term_help("teacher forcing"))
continuation = looked_at == "decoder"
reference = st.text_input("A continuation of your text" if continuation else "A reference translation",
                          key="decoding_reference", persist_state="session",
                          placeholder="Type the words you expect next" if continuation
                          else "Type the translation you expect")
if reference.strip():
    try:
        forced = teacher_forcing(checkpoint, trace.text, reference)
    except InputError as error:
        st.info(str(error))
    else:
        forcing = teacher_forcing_figure(forced)
        show_figure(forcing, "teacher-forcing", teacher_forcing_table(forced), width=fixed_width(forcing))
        st.metric("Loss (mean negative log-likelihood per token)", f"{forced.loss:.3f} nats",
                  help=term_help("log-probability", "nats"))
