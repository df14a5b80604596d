"""Decoding step by step: top-k, entropy and what each step looked at; sampling; the logit lens; greedy vs beam;
teacher forcing.
For an encoder-only model (BERT): the masked-token view instead."""

import streamlit as st

from explorer.capture.decoding_steps import steps_table, stopping_reason, teacher_forcing, teacher_forcing_table
from explorer.capture.inputs import InputError
from explorer.figures.decoding import fixed_width, plotly_bars, steps_described, teacher_forcing_figure
from explorer.figures.token_bars import html_bars
from explorer.models.interface import Embeds, Generates
from explorer.pages.components.decoding_beam_section import show_beam_search
from explorer.pages.components.decoding_masked_section import masked_token_view
from explorer.pages.components.decoding_step_section import show_one_step
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.lens_and_sampling import logit_lens_section, sampling_section
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.session import view_pruned
from explorer.pages.components.traces import current_trace
from explorer.pages.components.widgets import one_tab_at_a_time, show_figure, show_table_figure
from explorer.pages.registry import page

st.title("Decoding")   # first: the notices about the sentence go under it
checkpoint, trace = current_trace()
if isinstance(checkpoint, Embeds):          # a sentence encoder: nothing to decode
    st.info(f"**{checkpoint.name}** writes no tokens and fills no mask: its output is one vector for the whole "
            f"sentence, shown on the [Translation]({page('translation').name}) page. Decoding, beam search and the "
            f"{linked('logit lens')} do not apply to it; the [Attention]({page('attention').name}) and "
            f"[Patching]({page('patching').name}) pages do.")
    st.stop()
st.caption("How the model picks each token it writes: the probabilities it gave the candidates at every step, where "
           "it looked while choosing, and how other ways of choosing (sampling, beam search) change the output.")
if not isinstance(checkpoint, Generates):
    pruning_notice(checkpoint, "full", "the masked-token view fills the mask with the model as trained.")
else:
    pruning_notice(checkpoint)
pruned = view_pruned(checkpoint)

if not isinstance(checkpoint, Generates):
    masked_token_view(checkpoint, trace)         # pages/components/decoding_masked_section.py
    st.stop()

st.caption(f"Decoding: {trace.decoding}. Output: {len(trace.steps)} steps. {stopping_reason(checkpoint, trace)}",
           help=term_help("greedy decoding", "beam search", "entropy", "nats"))


def step_by_step() -> None:
    # HTML bars (explorer/figures/token_bars.py: no plotly.js on the page's first view); ⬇ HTML the plotly chart
    described = steps_described(trace.steps)
    show_table_figure(html_bars(described), "decoding-steps", steps_table(trace),
                      interactive=lambda: plotly_bars(described))
    show_one_step(checkpoint, trace)         # pages/components/decoding_step_section.py


def forced_by_a_reference() -> None:
    st.header("Teacher forcing", help=term_help("teacher forcing"))
    continuation = trace.step_kind.is_self     # no cross-attention: a decoder-only model continues the text
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


# One part at a time, as on the Attention, Internals and Heads pages: only the open tab runs and is drawn (all six
# figures at once made a change to this page at 45 words take about 1 s); the tab is kept in the URL as
# `decoding_part=` (Internals' tab is `part=`: each page's stays when the other is visited).
# Sampling and the logit lens: pages/components/lens_and_sampling.py; Beam search: decoding_beam_section.py.
PARTS = {"Step by step": step_by_step, "Sampling": lambda: sampling_section(checkpoint, trace),
         "Logit lens": lambda: logit_lens_section(checkpoint, trace),
         "Beam search": lambda: show_beam_search(checkpoint, trace, pruned),
         "Teacher forcing": forced_by_a_reference}
one_tab_at_a_time(PARTS, "decoding_part", "decoding_part")
