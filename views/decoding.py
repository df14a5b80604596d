"""Decoding step by step: top-k, entropy and cross-attention per step; greedy vs beam; teacher forcing."""

import pandas as pd
import streamlit as st

from explorer.decoding_steps import (beam_steps_table, cross_attention_row, finished_table, steps_table,
                                     stopping_reason, teacher_forcing, teacher_forcing_table)
from explorer.figures.decoding import (attention_row_figure, beam_tree_figure, step_figure, steps_overview,
                                       teacher_forcing_figure)
from explorer.inputs import InputError
from views.session import (cached_beam_tree, current_checkpoint, current_trace, require_own_model, selection,
                           weights_mtime)
from views.widgets import show_figure

st.title("Decoding")   # first: the notices about the sentence go under it
require_own_model(current_checkpoint(), "Decoding")
checkpoint, trace = current_trace()
config = checkpoint.model.config
st.caption(f"Decoding: {trace.decoding}. Output: {len(trace.steps)} steps. {stopping_reason(trace, checkpoint)}")

show_figure(steps_overview(trace.steps), "decoding-steps", steps_table(trace))

st.header("One step")
step_index = st.slider("Step", 0, len(trace.steps) - 1, 0, key="decoding_step") if len(trace.steps) > 1 else 0
step = trace.steps[step_index]
left, right = st.columns(2)
with left:
    show_figure(step_figure(step, step_index), f"step-{step_index}-top-k",
                pd.DataFrame({"token": step.top_tokens, "probability": step.top_probs}))
with right:
    layer = st.selectbox("Cross-attention layer", range(config.decoder_layers), index=config.decoder_layers - 1,
                         key="decoding_layer")
    head_choice = st.selectbox("Head", ["average"] + list(range(config.heads)), key="decoding_head")
    row = cross_attention_row(trace, layer, step_index, None if head_choice == "average" else head_choice)
    show_figure(attention_row_figure(row, trace.source_tokens,
                                     f"step {step_index}: cross-attention, layer {layer}, head {head_choice}"),
                f"step-{step_index}-cross-attention", pd.DataFrame({"source": trace.source_tokens, "weight": row}))

st.header("Greedy versus beam search")
beam_size = st.slider("Beam size", 2, 10, max(2, selection().beam_size if selection().beam_size > 1 else 5),
                      key="decoding_beam")
alpha = st.slider("Length penalty α", 0.0, 2.0, 0.6, 0.1, key="decoding_alpha",
                  help="Hypotheses are ranked by log-probability ÷ ((5 + length) / 6)^α (GNMT).")
result = cached_beam_tree(str(checkpoint.path), weights_mtime(str(checkpoint.path)), trace.text, beam_size, alpha)
show_figure(beam_tree_figure(result, checkpoint.tokenizer.pieces), f"beam-{beam_size}-tree",
            beam_steps_table(result, checkpoint.tokenizer))
st.markdown("**Finished hypotheses** (best first)")
st.table(finished_table(result, checkpoint.tokenizer).style.format({"log-prob": "{:.3f}", "score": "{:.3f}"}))   # a table wraps long hypotheses
st.caption(f"The translation shown on the other pages ({trace.decoding}):")
st.text(trace.translation)

st.header("Teacher forcing")
reference = st.text_input("A reference translation (German)", key="decoding_reference",
                          placeholder="Type the German translation you expect")
if reference.strip():
    try:
        forced = teacher_forcing(checkpoint, trace.text, reference)
    except InputError as error:
        st.info(str(error))
    else:
        show_figure(teacher_forcing_figure(forced), "teacher-forcing", teacher_forcing_table(forced))
        st.metric("Loss (mean negative log-likelihood per token)", f"{forced.loss:.3f} nats")
