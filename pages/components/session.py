"""Session state and caching: what the person chose (model, sentence, decoding), the cached model and trace,
and what the pages say about the sentence.

State lives in st.session_state (one per browser session). Models are cached once per process and shared,
which is safe because hooks and head masks are per call; traces are cached by (checkpoint, sentence, decoding,
pruned heads, casing), so one person's choices never reach another's results.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

import explorer.settings as settings
from explorer.analyses.corpus_scoring import scorer_for
from explorer.analyses.head_evolution import EVOLUTION_FILE
from explorer.analyses.shipped_analyses import shipped
from explorer.analyses.word_focus import lecture_answer, lecture_strongest
from explorer.capture.decoding_steps import beam_tree, masked_word, stopping_reason
from explorer.capture.domain import familiarity
from explorer.capture.examples import EXAMPLES as CAPTION_EXAMPLES
from explorer.capture.examples import label
from explorer.capture.head_sets import HeadSet, HeadSpecError, format_heads, head_mask, head_set, parse_heads
from explorer.capture.input_kinds import IMAGE, TEXT, input_kind
from explorer.capture.inputs import InputError, prepare_source
from explorer.capture.memo import BoundedCache
from explorer.capture.trace import Trace, trace_sentence
from explorer.capture.translation import translate
from explorer.figures.head_roles import evolution_figure
from explorer.models.decoding import BeamResult
from explorer.models.installed import INSTALLED
from explorer.models.interface import AttentionModel, ExplorerModel, Generates, ModelError, Translates, target_languages
from explorer.models.loader import open_model
from explorer.pages.components.access import policy
from explorer.pages.registry import PAGES, page
from explorer.teaching.lesson_steps import quoted as literally
from explorer.teaching.wording import plural

BUNDLED = {model.label: model.folder for model in settings.BUNDLED}
IMAGE_MODEL = "Digits ViT (digits-vit)"     # what the Images page draws when the open model reads text
IMAGES_PAGE = next(p.name for p in PAGES if p.reads == IMAGE.name)     # where a model that reads images is sent
OWN = "Your own checkpoint folder…"      # a free-text folder box: on one's own machine only, never when served
# Real pretrained models installed as packages (models/installed.py), offered when installed: label → name.
INSTALLED_MODELS = {f"{name} (pretrained)": name for name in INSTALLED}
DEFAULT_MODEL = "8 heads (en-de-h8)"
EXAMPLES = [example.english for example in CAPTION_EXAMPLES]
EXAMPLE_LABELS = {example.english: label(example) for example in CAPTION_EXAMPLES}
MAX_SENTENCE_CHARS = 5000
# The corpora the shipped analyses were measured on: the Heads and Prune pages' defaults.
DEFAULT_CORPUS = settings.MULTI30K
DEFAULT_TREEBANK = settings.TREEBANK


@dataclass(frozen=True)
class Selection:
    model_path: str
    sentence: str
    beam_size: int          # 1 = greedy
    fix_casing: bool = True     # feed all-caps / all-lower-case sentences in sentence case
    target_language: str = ""   # a multilingual model's output language ("" = its default)


@st.cache_resource(show_spinner="Loading the model…", max_entries=8)
def loaded_model(path: str, modified: float) -> ExplorerModel:
    # `modified` (the weights' mtime) is part of the key so a retrained folder is reloaded.
    return shared_model(path, modified)


_MODELS: OrderedDict[tuple[str, float], ExplorerModel] = OrderedDict()
_MODELS_LOCK = threading.Lock()


def shared_model(path: str, modified: float) -> ExplorerModel:
    """The model, opened once per server process by whoever asks first: a session, or the warm-up of a served
    explorer (warm_up_models). One load at a time: a second one would only share the disk and the cores. A model
    already open is returned at once, without waiting behind another one's load (the warm-up's MiniLM)."""
    key = (path, modified)
    model = _MODELS.get(key)
    if model is not None:
        return model
    with _MODELS_LOCK:
        if key not in _MODELS:
            # Ours, a Hugging Face folder, or a hub id: downloaded on one's own machine, never for a visitor.
            _MODELS[key] = open_model(path, download=not policy().serving, device=policy().device)
            while len(_MODELS) > 8:
                _MODELS.popitem(last=False)
        return _MODELS[key]


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
        for folder in BUNDLED.values():
            with contextlib.suppress(ModelError, OSError):      # the page that opens it says what is wrong
                shared_model(str(folder), weights_mtime(str(folder)))
        import explorer.pages.components as components
        for module in pkgutil.iter_modules(components.__path__):
            importlib.import_module(f"{components.__name__}.{module.name}")

    threading.Thread(target=load_each, name="warm-up-models", daemon=True).start()


def cached_checkpoint(path: str, modified: float, target_language: str = "") -> ExplorerModel:
    """The model, shared by every session; a multilingual one translating into target_language (a light view
    of the same weights: nothing of one session's choice is stored on the shared model)."""
    model = loaded_model(path, modified)
    return model.for_target_language(target_language) if target_language in target_languages(model) else model


# Traces and beam trees are the big results (a 250-token sentence's trace is ~70 MB): bounded by bytes as well as
# entries, shared read-only by every session (explorer/capture/memo.py). 256 MB holds 78 traces of 45 words on h8
# (3.3 MB each), room for a class's sentences; with 512 MB the cache was still filling after 100 distinct sentences,
# and a server's memory after 1,000 stood 17–24% over its memory after 100 (benchmarks/class_load.py --distinct).
TRACES = BoundedCache(int(os.environ.get("ATTENTION_EXPLORER_TRACE_CACHE_MB", "256")) * 2**20, max_entries=256)
BEAM_TREES = BoundedCache(64 * 2**20, max_entries=64)


def memoised(cache: BoundedCache, key: tuple, compute, spinner: str):
    """cache.get with a spinner on the page while a new result is computed."""
    if key in cache:
        return cache.get(key, compute)
    with st.spinner(spinner):
        return cache.get(key, compute)


def cached_trace(path: str, modified: float, sentence: str, beam_size: int, pruned: HeadSet = (),
                 fix_casing: bool = True, target_language: str = "") -> Trace:
    """pruned: the masked heads (a HeadSet, hashable), so each pruning has its own cache entry. `modified` (the
    weights' mtime) keys it too: a retrained folder is never stale."""
    return memoised(TRACES, (path, modified, sentence, beam_size, tuple(pruned), fix_casing, target_language),
                    lambda: trace_sentence(cached_checkpoint(path, modified, target_language), sentence,
                                           beam_size=beam_size, pruned=pruned, fix_casing=fix_casing),
                    "Translating…")


def cached_beam_tree(path: str, modified: float, text: str, beam_size: int, alpha: float,
                     target_language: str = "", pruned: HeadSet = ()) -> BeamResult:
    """The beam search tree depends only on these: moving the step slider must not search again."""
    return memoised(BEAM_TREES, (path, modified, text, beam_size, alpha, target_language, tuple(pruned)),
                    lambda: beam_tree(cached_checkpoint(path, modified, target_language), text, beam_size, alpha,
                                      pruned),
                    "Beam search…")


@st.cache_data(max_entries=64, show_spinner="Filling in the mask…")
def cached_masked_word(path: str, modified: float, text: str, position: int, fix_casing: bool = True):
    """A masked language model's predictions for one masked token of the sentence."""
    model = cached_checkpoint(path, modified)
    return masked_word(model, cached_trace(path, modified, text, 1, (), fix_casing), position)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_lecture_strongest(path: str, modified: float, sentence: str) -> tuple[str, float] | None:
    """The head that gives the lecture's antecedent the most weight from "it" (explorer.analyses.word_focus):
    two forward passes a model, computed once, not on every rerun of the Lesson or the Attention page."""
    return lecture_strongest(cached_checkpoint(path, modified), sentence)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_lecture_answer(path: str, modified: float, text: str, pronoun: str, antecedent: str) -> str:
    """What a model's heads make of a known pronoun (and the lecture's pair), in words; computed once."""
    return lecture_answer(cached_checkpoint(path, modified), text, pronoun, antecedent)


@st.cache_data(max_entries=64, show_spinner="Translating the examples…")
def example_translations(path: str, modified: float, pruned: HeadSet, target_language: str = "") -> list[str]:
    """The example sentences' outputs (translations, or continuations) with these heads pruned."""
    # `modified` keys the cache on the weights' mtime, like cached_trace: a retrained folder is never stale.
    return translate(cached_checkpoint(path, modified, target_language), EXAMPLES, pruned=pruned)


@st.cache_data(max_entries=64, show_spinner="Scoring the corpus…")
def corpus_score(path: str, modified: float, sources: tuple[str, ...], references: tuple[str, ...] | None,
                 pruned: HeadSet, target_language: str = "") -> float:
    """The model's quality with these heads pruned on a corpus: BLEU against the references for a translation
    model, perplexity of the text (references None) for a language model."""
    checkpoint = cached_checkpoint(path, modified, target_language)
    return scorer_for(checkpoint, list(sources), list(references) if references else None).quality(
        head_mask(pruned, checkpoint))


@st.cache_data(max_entries=32, show_spinner=False)
def evolution_chart(path: str, modified: float, measure: str, thresholds: tuple):
    """How the heads formed: the figure depends on the shipped file, the measure and the thresholds only, not the
    sentence, so it is built once (72 heads' lines took 0.24 s a run)."""
    return evolution_figure(shipped(cached_checkpoint(path, modified), EVOLUTION_FILE), measure, dict(thresholds))


def weights_mtime(path: str) -> float:
    installed = INSTALLED.get(path)
    folder = (installed.installed_folder() if installed else None) or Path(path)
    weights = folder / "model.safetensors"
    return weights.stat().st_mtime if weights.is_file() else 0.0


def partner_model(model: AttentionModel) -> tuple[str, str] | None:
    """(label, path) of the model the lecture's answers are shown beside: the bundled 8-head model for an installed
    pretrained one, the first installed pretrained model for any other; None when it is not offered."""
    offered = offered_models()
    installed = [label for label in INSTALLED_MODELS if label in offered]
    own = str(model.path) in INSTALLED
    label = DEFAULT_MODEL if own else (installed[0] if installed else None)
    return (label, offered[label]) if label in offered else None


def offered_models() -> dict[str, str]:
    """label → folder or hub id: the bundled models that are present, then those the host named at start
    (`start.sh --models …`, each by its folder's name or its hub id)."""
    offered = {label: str(path) for label, path in BUNDLED.items() if (path / "config.json").is_file()}
    offered |= {label: name for label, name in INSTALLED_MODELS.items() if INSTALLED[name].installed_folder()}
    for named in policy().models:
        offered.setdefault(Path(named).name if Path(named).is_dir() else named, named)
    return offered


def model_links() -> dict[str, str]:
    """label → its name in a link's `?model=`: 'h8' for the bundled 8-head model, an installed model's name
    (all-MiniLM-L6-v2), the label for a host's model."""
    return {label: BUNDLED[label].name.rsplit("-", 1)[-1] if label in BUNDLED else INSTALLED_MODELS.get(label, label)
            for label in offered_models()}


def selection() -> Selection:
    state = st.session_state
    if state.get("model") == OWN and not policy().serving:
        path = str(Path(state.get("own_model", "") or ".").expanduser())
    else:   # never anything but an offered model, whatever the session state holds
        offered = offered_models()
        path = offered.get(state.get("model"), offered.get(DEFAULT_MODEL) or next(iter(offered.values()), ""))
    beam = state.get("beam_size", 5) if state.get("decoding") == "beam search" else 1
    return Selection(path, state.get("sentence", "")[:MAX_SENTENCE_CHARS], beam, state.get("fix_casing", True),
                     state.get("target_language", ""))


def chosen_model() -> AttentionModel:
    """The chosen model (in the chosen target language), whatever it reads; an error message and a stopped page
    when it cannot be loaded."""
    chosen = selection()
    try:
        return cached_checkpoint(chosen.model_path, weights_mtime(chosen.model_path), chosen.target_language)
    except ModelError as error:
        st.error(f"This model cannot be loaded: {error}")
        st.stop()


def current_checkpoint() -> ExplorerModel:
    """The chosen model of text; on a page about sentences, a model that reads images is sent to the Images page."""
    model = chosen_model()
    if input_kind(model) is not TEXT:
        st.info(f"**{model.name}** reads {input_kind(model).reads}, not sentences: this page is about a sentence's tokens. The "
                f"[Images]({IMAGES_PAGE}) page shows where its heads look on a digit, layer by layer and head by head.")
        st.stop()
    return model


def image_model() -> tuple[AttentionModel, bool]:
    """(the model the Images page draws, whether it is the sidebar's): the chosen one if it reads images, else the
    bundled Vision Transformer."""
    model = chosen_model()
    if input_kind(model) is IMAGE:
        return model, True
    path = str(BUNDLED[IMAGE_MODEL])
    try:
        return cached_checkpoint(path, weights_mtime(path)), False
    except ModelError as error:
        st.error(f"The bundled image model cannot be loaded: {error}")
        st.stop()


def view_pruned(checkpoint: ExplorerModel) -> HeadSet:
    """The heads pruned in this view (chosen on the Prune page, or by a link's `pruned=`), as heads of this model;
    none when they name heads it does not have (the Prune page says why)."""
    try:
        return head_set(parse_heads(st.session_state.get("url_pruned", ""), checkpoint))
    except HeadSpecError:
        return ()


PRUNE_PAGE = page("prune").name


def pruning_notice(checkpoint: ExplorerModel, shown: str = "pruned", why: str = "") -> None:
    """Say at a page's top what it does with the heads pruned on the Prune page, so no page ignores them silently.
    shown: "pruned" (this page shows the pruned model) or "full" (it shows the whole model, for the reason `why`)."""
    pruned = view_pruned(checkpoint)
    if not pruned:
        return
    heads = plural(len(pruned), "head")
    named = format_heads(pruned)
    if shown == "pruned":
        st.info(f"✂ **{heads} pruned** ({named}): this page shows the model without them. "
                f"Change or undo it on the [Prune]({PRUNE_PAGE}) page.")
    else:
        st.warning(f"✂ **{heads} pruned** on the [Prune]({PRUNE_PAGE}) page ({named}), but this page shows the "
                   f"whole model: {why}")


def greedy_notice(why: str) -> None:
    """Say at a page's top that it decodes greedily whatever the sidebar's decoding (beam search), and why."""
    beam = selection().beam_size
    if beam > 1 and isinstance(chosen_model(), Generates):        # a model that writes nothing decodes nothing
        st.warning(f"The sidebar asks for beam search ({beam} beams), but this page decodes greedily: {why}")


def current_trace(pruned: HeadSet | None = None, notices: bool = True) -> tuple[ExplorerModel, Trace]:
    """The chosen model and its trace of the current sentence; a message instead when there is none (the page
    stops there).
    pruned: the heads masked; None for the view's (the Prune page's choice), () for the whole model.
    notices: say what happened to the sentence (cut, recased, unfamiliar, stopped at the length limit); once
    per page."""
    checkpoint, trace = sentence_trace(pruned, notices)
    if trace is None:
        st.stop()
    return checkpoint, trace


def sentence_trace(pruned: HeadSet | None = None, notices: bool = True) -> tuple[ExplorerModel, Trace | None]:
    """As current_trace, but input the model cannot read (an empty sentence) gives its message and None, and the
    page goes on: for a page whose other parts do not read the sentence (the Heads page's role maps)."""
    chosen = selection()
    checkpoint = current_checkpoint()
    if pruned is None:
        pruned = view_pruned(checkpoint)
    try:
        prepare_source(chosen.sentence, checkpoint)          # a clear message for empty input, before the cache
        trace = cached_trace(chosen.model_path, weights_mtime(chosen.model_path), chosen.sentence, chosen.beam_size,
                             pruned, chosen.fix_casing, checkpoint.target_language)
    except InputError as error:
        st.info(str(error))
        return checkpoint, None
    if notices:
        warn_if_truncated(trace, checkpoint)
    return checkpoint, trace


def warn_if_truncated(trace: Trace, checkpoint: ExplorerModel) -> None:
    """Say what happened to input the model cannot take whole: too long, or characters it has never seen."""
    typed = len(st.session_state.get("sentence", ""))
    if typed > MAX_SENTENCE_CHARS:
        st.warning(f"Your text has {typed:,} characters: the explorer reads only its first {MAX_SENTENCE_CHARS:,}.")
    if trace.truncated:
        read = len(trace.source_tokens) or trace.first_step_position + 1     # a decoder-only model: the prompt
        room = "" if checkpoint.has("encoder") else ", the continuation included"
        st.warning(f"The sentence is longer than the model takes (at most {checkpoint.max_positions} tokens{room}): "
                   f"it was cut to its first {read} tokens.")
    # A translation that never chose its end token; a language model's continuation stops at its limit by design.
    if isinstance(checkpoint, Translates) and trace.steps and trace.steps[-1].chosen_id != checkpoint.end_id:
        st.warning(f"The output stops mid-sentence. {stopping_reason(trace, checkpoint)} A sentence this long or "
                   "this far from the training data often makes the model repeat itself.")
    if trace.recased_from:
        st.info(f"You typed {literally(shorten(trace.recased_from))} all in capitals or all in lower case; the model "
                f"was given {literally(shorten(trace.text))}, in sentence case like its training captions. Untick “Fix ALL-CAPS "
                "/ all-lower-case input” in the sidebar to feed it as typed.")
    known = familiarity(trace.text, checkpoint)
    if known is not None and known.in_output_language:
        written = checkpoint.target_language if isinstance(checkpoint, Translates) else ""
        st.info(f"This looks like {written or 'the language the model writes'}"
                f"{', the language the model writes' if written else ''}; it reads English. Type an English "
                f"sentence, e.g. “{EXAMPLES[0]}”")
    elif known is not None and known.out_of_domain:
        named = ", ".join(literally(w) for w in known.unfamiliar[:6]) or "most of its words"
        # The visitor's own sentence in markdown: taken literally (its * [ ] < $ never become markup).
        far = (f"Part of your text, {literally(shorten(known.farthest_sentence))}, is" if known.farthest_sentence
               and known.farthest_log_perplexity > known.log_perplexity else "This sentence is")
        st.info(f"{far} far from what the model was trained on (image captions). Unfamiliar to it: "
                f"{named}. Expect a poor translation; it does best when you describe a picture, e.g. "
                f"“{EXAMPLES[0]}”")
    unknown = checkpoint.unknown_characters(trace.text)
    if unknown:
        unk = checkpoint.pieces([checkpoint.unk_id])[0]
        domain = " It was trained on English image captions." if known is not None else ""
        st.info(f"The model's vocabulary has no piece for {', '.join(literally(u) for u in unknown[:10])}: it reads "
                f"each as {literally(unk)} "
                f"(an unknown token).{domain}")


def shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
