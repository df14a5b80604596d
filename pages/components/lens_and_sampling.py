"""The Decoding page's Sampling and Logit lens sections (and the lens of a masked language model's masked token):
read the settings, call explorer/, draw. Results are cached by what they depend on, shared read-only by the
sessions; a sampling setting's change draws a new sample, whose steps' log-probabilities are computed once (cached)
and then only re-softmaxed."""

from __future__ import annotations

import streamlit as st

from explorer.analyses.sentence.logit_lens import lens_note, lens_table, logit_lens, masked_logit_lens
from explorer.capture.head_sets import parse_heads
from explorer.capture.inputs import app_casing
from explorer.capture.memo import BoundedCache
from explorer.capture.sampling import sample, sample_log_probs, step_sampling, step_sampling_table, vocabulary_size
from explorer.capture.trace import Trace
from explorer.figures.decoding import fixed_width
from explorer.figures.logit_lens import logit_lens_figure
from explorer.figures.sampling import sampling_figure
from explorer.models.interface import ExplorerModel
from explorer.models.sampling import Sampling
from explorer.pages.components import url_state
from explorer.pages.components.caches import memoised
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.session import selection
from explorer.pages.components.widgets import show_figure
from explorer.service import ModelRef

TEMPERATURES = [round(i * 0.05, 2) for i in range(41)]          # 0 … 2
TOP_PS = [round(i * 0.05, 2) for i in range(1, 21)]             # 0.05 … 1
MAX_SEED = 2 ** 31 - 1
LOG_PROBS = BoundedCache(128 * 2**20, max_entries=64)           # [steps, vocab] per sample
VOCABULARIES = BoundedCache(2**20, max_entries=64)
LENSES = BoundedCache(32 * 2**20, max_entries=64)
SAMPLES = BoundedCache(4 * 2**20, max_entries=512)


def trace_key(checkpoint: ExplorerModel, trace: Trace) -> tuple:
    """What a trace's derived results depend on: the weights, the output's language and the trace's own ids."""
    path = str(checkpoint.path)
    return (*ModelRef.of(path), checkpoint.target_language, trace.pruned, tuple(trace.source_ids),
            tuple(trace.target_ids), tuple(step.chosen_id for step in trace.steps))


def number(value: float) -> str:
    return f"{value:g}"


def kept_whole(key: str, parameter: str, largest: int) -> None:
    """url_state.kept for a whole number 0…largest (the seed has 2³¹ values: no list of options): the widget's
    value when in range, else the kept one (the link's), else 0."""
    value = st.session_state.get(key)
    if isinstance(value, int) and 0 <= value <= largest:
        return
    text = url_state.saved(parameter)
    st.session_state[key] = int(text) if text.isdigit() and int(text) <= largest else 0


def sampling_settings(vocabulary: int) -> Sampling:
    """The four settings, each in the URL (temperature=, top_k=, top_p=, seed=) so a link reproduces the sample."""
    temperature_column, top_k_column, top_p_column, seed_column = st.columns(4)
    url_state.kept("sampling_temperature", "temperature", TEMPERATURES, encode=number, default=1.0)
    temperature = temperature_column.select_slider(
        "Temperature", TEMPERATURES, key="sampling_temperature", persist_state="session", format_func=number,
        help="Logits ÷ T before the softmax: below 1 sharpens the distribution, above 1 flattens it; 0 is greedy. "
             f"({linked('temperature', 'glossary')})")
    url_state.keep("temperature", temperature, number)
    kept_whole("sampling_top_k", "top_k", vocabulary)
    top_k = top_k_column.number_input("Top-k (0: all)", 0, vocabulary, key="sampling_top_k", persist_state="session",
                                      help="Draw only from the k most probable tokens. "
                                           f"({linked('top-k', 'glossary')})")
    url_state.keep("top_k", top_k)
    url_state.kept("sampling_top_p", "top_p", TOP_PS, encode=number, default=1.0)
    top_p = top_p_column.select_slider(
        "Top-p", TOP_PS, key="sampling_top_p", persist_state="session", format_func=number,
        help="Nucleus sampling (Holtzman et al. 2020): draw only from the smallest set of most probable tokens "
             f"whose probability adds up to at least p. ({linked('top-p', 'glossary')})")
    url_state.keep("top_p", top_p, number)
    kept_whole("sampling_seed", "seed", MAX_SEED)
    seed = seed_column.number_input("Seed", 0, MAX_SEED, key="sampling_seed", persist_state="session",
                                    help="The same settings and seed give the same sample (a link keeps them).")
    url_state.keep("seed", seed)
    return Sampling(float(temperature), int(top_k), float(top_p), int(seed))


def sample_step(steps: int) -> int:
    """The step of the sample the section shows: its own slider (a sample's length is its own), in the URL."""
    if steps < 2:
        return 0
    url_state.kept("sampling_step", "sample_step", range(steps), default=0)
    index = st.slider("Step of the sample", 0, steps - 1, key="sampling_step", persist_state="session")
    url_state.keep("sample_step", index)
    return index


def sampling_section(checkpoint: ExplorerModel, trace: Trace) -> None:
    st.header("Sampling", help=term_help("sampling"))
    st.caption("Instead of the most probable token, each token is drawn at random from its step's distribution, "
               "reshaped by the temperature (logits ÷ T), top-k and top-p (nucleus sampling, Holtzman et al. 2020); "
               "no special token but the end token is ever drawn. The seed makes a sample reproducible: this page's "
               "link keeps all four settings.")
    key = trace_key(checkpoint, trace)
    vocabulary = memoised(VOCABULARIES, key[:3], lambda: vocabulary_size(checkpoint), "Reading the vocabulary…")
    settings = sampling_settings(vocabulary)
    fix_casing = app_casing(checkpoint, selection().fix_casing)
    pruned = list(parse_heads(trace.pruned, checkpoint))
    sample_key = key + (trace.text, fix_casing, settings)
    sampled = memoised(SAMPLES, sample_key, lambda: sample(checkpoint, trace.text, settings, pruned, fix_casing),
                       "Sampling…")
    st.caption("Sampled output" + (" (temperature 0: greedy decoding)" if settings.greedy else "") + ":")
    st.text(sampled.text)
    if not sampled.step_ids:
        return
    log_probs = memoised(LOG_PROBS, sample_key, lambda: sample_log_probs(checkpoint, sampled, pruned),
                         "Reading the sample's distributions…")
    index = sample_step(len(sampled.step_ids))
    view = step_sampling(log_probs[index], settings, checkpoint, drawn_id=sampled.step_ids[index])
    figure = sampling_figure(view, index)
    st.caption(f"Step {index} of the sampled output above, where it drew `{sampled.step_tokens[index]}` (▶), "
               "given the tokens it drew before: the "
               "model's own distribution there (grey) and the one the token was drawn from with these settings "
               "(blue).")
    show_figure(figure, f"sampling-step-{index}", step_sampling_table(view), width=fixed_width(figure))


def logit_lens_section(checkpoint: ExplorerModel, trace: Trace) -> None:
    st.header("Logit lens", help=term_help("logit lens"))
    st.caption(f"nostalgebraist 2020, “interpreting GPT: the logit lens”: the {linked('residual stream')} after each "
               f"decoder layer, read through the model's own final {linked('layer norm', 'norm')} and output "
               "projection, as if the model stopped there. Teacher-forced over the output above: each cell is what "
               "that layer would predict at that step; colour: the probability of the token the step finally chose; "
               "the last layer is the model's own output.")
    lens = memoised(LENSES, trace_key(checkpoint, trace), lambda: logit_lens(checkpoint, trace), "Reading the layers…")
    figure = logit_lens_figure(lens)
    show_figure(figure, "logit-lens", lens_table(lens), width=fixed_width(figure))
    st.caption(lens_note(lens))


def masked_lens_section(checkpoint: ExplorerModel, trace: Trace, position: int) -> None:
    """The lens of a masked language model: what each encoder layer would fill in at the masked position."""
    st.subheader("Logit lens", help=term_help("logit lens"))
    st.caption(f"nostalgebraist 2020: the {linked('residual stream')} after each encoder layer at the masked position, read "
               "through the model's own masked-language-model head, as if the model stopped there.")
    lens = memoised(LENSES, trace_key(checkpoint, trace) + (position,),
                    lambda: masked_logit_lens(checkpoint, trace, position), "Reading the layers…")
    figure = logit_lens_figure(lens)
    show_figure(figure, f"mask-{position}-logit-lens", lens_table(lens), width=fixed_width(figure))
