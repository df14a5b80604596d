"""The Decoding page's "Greedy versus beam search": the explorer's beam search over the model's next-token
probabilities drawn as a tree (every live beam, each step), its finished hypotheses, and the output the other
pages show; past a size of work it waits for a button."""

from __future__ import annotations

import streamlit as st

from explorer.capture.decoding_steps import beam_steps_table, finished_table
from explorer.figures.decoding import beam_tree_figure
from explorer.pages.components import url_state
from explorer.pages.components.caches import cached_beam_tree
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.session import ref_of, selection
from explorer.pages.components.widgets import show_figure

# The beam tree's work (beams × steps × decoder tokens × decoder layers × d_model², ∝ its multiply-adds) drawn
# without asking: the bundled models' 45-token caption with 10 beams ~4e9, their 250-token text ~1.3e9 (they
# translate it in ~36 tokens); GPT-2 small (12 × 768) on a 500-token prompt ~6e11 (many minutes on one thread).
BEAM_WORK = 10e9


def beam_tree_wanted(checkpoint, trace, beam_size: int, alpha: float) -> bool:
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


def show_beam_search(checkpoint, trace, pruned) -> None:
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
    if beam_tree_wanted(checkpoint, trace, beam_size, alpha):
        result = cached_beam_tree(ref_of(checkpoint), trace.text, beam_size,
                                  alpha, checkpoint.target_language, pruned)
        # At its own width: every rank a column as wide as its labels need.
        show_figure(beam_tree_figure(result, checkpoint.pieces), f"beam-{beam_size}-tree",
                    beam_steps_table(result, checkpoint.pieces), width="content")
        st.markdown("**Finished hypotheses** (best first)")
        # a table wraps long hypotheses
        st.table(finished_table(result, checkpoint.detokenize).style.format({"log-prob": "{:.3f}", "score": "{:.3f}"}))
    st.caption(f"The output shown on the other pages ({trace.decoding}):")
    st.text(trace.output_text)
