"""Decoding step by step: top-k, entropy and cross-attention per step; greedy vs beam; teacher forcing."""

import pandas as pd
import streamlit as st

from explorer.decoding_steps import teacher_forcing
from explorer.figures.decoding import (attention_row_figure, beam_tree_figure, step_figure, steps_overview,
                                       teacher_forcing_figure)
from explorer.inputs import InputError
from explorer.decoding_steps import stopping_reason
from views.common import cached_beam_tree, current_trace, selection, show_figure, weights_mtime

st.title("Decoding")   # first: the notices about the sentence go under it
checkpoint, trace = current_trace()
config = checkpoint.model.config
st.caption(f"Decoding: {trace.decoding}. Output: {len(trace.steps)} steps. {stopping_reason(trace, checkpoint)}")

steps_table = pd.DataFrame({"chosen": [s.chosen for s in trace.steps], "p(chosen)": [s.chosen_prob for s in trace.steps],
                            "entropy (nats)": [s.entropy for s in trace.steps]})
show_figure(steps_overview(trace.steps), "decoding-steps", steps_table)

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
    cross = trace.pattern("cross")[layer]
    row = cross.mean(0)[step_index] if head_choice == "average" else cross[head_choice, step_index]
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
            pd.DataFrame([{"step": i + 1, "rank": r, "token": t, "parent": p, "cumulative log-prob": lp}
                          for i, s in enumerate(result.steps)
                          for r, (t, p, lp) in enumerate(zip(checkpoint.tokenizer.pieces(s.tokens), s.parents, s.log_probs))]))
st.markdown("**Finished hypotheses** (best first)")
finished = pd.DataFrame({"translation": [checkpoint.tokenizer.decode(h.tokens) for h in result.finished],
                         "log-prob": [h.log_prob for h in result.finished], "score": [h.score for h in result.finished],
                         "tokens": [len(h.tokens) for h in result.finished]})
st.table(finished.style.format({"log-prob": "{:.3f}", "score": "{:.3f}"}))   # a table wraps long hypotheses
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
        show_figure(teacher_forcing_figure(forced), "teacher-forcing",
                    pd.DataFrame({"token": forced.tokens, "probability": forced.probabilities, "rank": forced.ranks}))
        st.metric("Loss (mean negative log-likelihood per token)", f"{forced.loss:.3f} nats")
