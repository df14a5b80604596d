"""The app's adapter to the trace service (explorer/service.py): one service per server process, its results with a
spinner on the page while they are computed, and the small results Streamlit's own cache keeps per argument. Every
function takes a ModelRef, so a folder retrained in place is never stale."""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import threading

import streamlit as st

import explorer.settings as settings
from explorer.analyses.corpus.corpus_scoring import scorer_for
from explorer.analyses.corpus.head_evolution import EVOLUTION_FILE
from explorer.analyses.corpus.shipped_analyses import shipped
from explorer.analyses.sentence.word_focus import lecture_answer, lecture_strongest
from explorer.capture.decoding_steps import masked_word
from explorer.capture.examples import SENTENCES as EXAMPLES
from explorer.capture.head_sets import HeadSet, head_mask
from explorer.capture.inputs import app_casing
from explorer.capture.memo import BoundedCache
from explorer.capture.trace import Trace
from explorer.capture.translation import translate
from explorer.figures.head_roles import evolution_figure
from explorer.models.decoding import BeamResult
from explorer.models.interface import ExplorerModel, ModelError
from explorer.models.loader import open_model
from explorer.pages.components.access import policy
from explorer.service import ModelRef, TraceService


def open_for_this_server(path: str) -> ExplorerModel:
    """Ours, a Hugging Face folder, or a hub id: downloaded on one's own machine, never for a visitor; on the host's
    device. The policy is read at each load, not once, so a test may change it."""
    return open_model(path, download=not policy().serving, device=policy().device)


SERVICE = TraceService(opener=open_for_this_server,
                       trace_megabytes=int(os.environ.get("ATTENTION_EXPLORER_TRACE_CACHE_MB", "256")))


def cached_model(ref: ModelRef, target_language: str = "") -> ExplorerModel:
    """The model, shared by every session (in the target language asked for, a light view of the same weights)."""
    return spinning(SERVICE.is_open(ref), "Loading the model…", lambda: SERVICE.model(ref, target_language))


def spinning(ready: bool, spinner: str, compute):
    """compute(), with a spinner on the page unless its result is ready."""
    if ready:
        return compute()
    with st.spinner(spinner):
        return compute()


def memoised(cache: BoundedCache, key: tuple, compute, spinner: str):
    """cache.get with a spinner on the page while a new result is computed."""
    return spinning(key in cache, spinner, lambda: cache.get(key, compute))


def cached_trace(ref: ModelRef, sentence: str, beam_size: int, pruned: HeadSet = (), fix_casing: bool = True,
                 target_language: str = "") -> Trace:
    """The sentence's trace, computed once for every session that asks (pruned: the masked heads)."""
    fix_casing = app_casing(cached_model(ref, target_language), fix_casing)
    key = SERVICE.trace_key(ref, sentence, beam_size, pruned, fix_casing, target_language)
    return spinning(key in SERVICE.traces, "Translating…",
                    lambda: SERVICE.trace(ref, sentence, beam_size, pruned, fix_casing, target_language))


def cached_beam_tree(ref: ModelRef, text: str, beam_size: int, alpha: float, target_language: str = "",
                     pruned: HeadSet = ()) -> BeamResult:
    key = SERVICE.beam_key(ref, text, beam_size, alpha, target_language, pruned)
    return spinning(key in SERVICE.beam_trees, "Beam search…",
                    lambda: SERVICE.beam_tree(ref, text, beam_size, alpha, target_language, pruned))


@st.cache_data(max_entries=64, show_spinner="Filling in the mask…")
def cached_masked_word(ref: ModelRef, text: str, position: int, fix_casing: bool = True):
    """A masked language model's predictions for one masked token of the sentence."""
    return masked_word(cached_model(ref), cached_trace(ref, text, 1, (), fix_casing), position)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_lecture_strongest(ref: ModelRef, sentence: str) -> tuple[str, float] | None:
    """The head that gives the lecture's antecedent the most weight from "it" (explorer.analyses.sentence.word_focus):
    two forward passes a model, computed once, not on every rerun of the Lesson or the Attention page."""
    return lecture_strongest(cached_model(ref), sentence)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_lecture_answer(ref: ModelRef, text: str, pronoun: str, antecedent: str) -> str:
    """What a model's heads make of a known pronoun (and the lecture's pair), in words; computed once."""
    return lecture_answer(cached_model(ref), text, pronoun, antecedent)


@st.cache_data(max_entries=64, show_spinner="Translating the examples…")
def example_translations(ref: ModelRef, pruned: HeadSet, target_language: str = "") -> list[str]:
    """The example sentences' outputs (translations, or continuations) with these heads pruned."""
    return translate(cached_model(ref, target_language), EXAMPLES, pruned=pruned)


@st.cache_data(max_entries=64, show_spinner="Scoring the corpus…")
def corpus_score(ref: ModelRef, sources: tuple[str, ...], references: tuple[str, ...] | None, pruned: HeadSet,
                 target_language: str = "") -> float:
    """The model's quality with these heads pruned on a corpus: BLEU against the references for a translation
    model, perplexity of the text (references None) for a language model."""
    model = cached_model(ref, target_language)
    return scorer_for(model, list(sources), list(references) if references else None).quality(head_mask(pruned, model))


@st.cache_data(max_entries=32, show_spinner=False)
def evolution_chart(ref: ModelRef, measure: str, thresholds: tuple):
    """How the heads formed: the figure depends on the shipped file, the measure and the thresholds only, not the
    sentence, so it is built once (72 heads' lines took 0.24 s a run)."""
    return evolution_figure(shipped(cached_model(ref), EVOLUTION_FILE), measure, dict(thresholds))


_WARMING = threading.Event()


def warm_up_models() -> None:
    """A served explorer (a class) loads its bundled models in the background when its first visitor arrives,
    so that the next students do not each wait for a model to load (a cold model took 7–10 s under load:
    benchmarks/class_load.py), then imports the pages' modules (a page's first view imported its own: 1.3 s for
    all of them, 9.9 s for the first view of every page on a fresh server against 3.3 s for the next). Once per
    server process."""
    if not policy().serving or _WARMING.is_set():
        return
    _WARMING.set()

    def load_each() -> None:
        for bundled in settings.BUNDLED:
            with contextlib.suppress(ModelError, OSError):      # the page that opens it says what is wrong
                SERVICE.model(ModelRef.of(bundled.folder))
        import explorer.pages.components as components
        for module in pkgutil.iter_modules(components.__path__):
            importlib.import_module(f"{components.__name__}.{module.name}")

    threading.Thread(target=load_each, name="warm-up-models", daemon=True).start()
