"""The sidebar every page shares: the model, the sentence, the examples and the decoding choice."""

from __future__ import annotations

import streamlit as st

from explorer.capture.domain import training_description
from explorer.capture.input_kinds import IMAGE, input_kind
from explorer.figures.common import COLOUR_SCALES, FIGURE_SCALE, PROJECTOR_SCALE
from explorer.models.interface import Generates, ModelError, target_languages
from explorer.pages.components import url_state
from explorer.pages.components.access import policy
from explorer.pages.components.caches import cached_model
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.presentation import fold_sidebar_for_projector
from explorer.pages.components.session import (
    EXAMPLE_LABELS,
    EXAMPLES,
    IMAGES_PAGE,
    MAX_SENTENCE_CHARS,
    OWN,
    model_links,
    selection,
)
from explorer.service import ModelRef

# Projector mode's type: every rem-sized text (Streamlit sizes text in rem) 25% larger, widgets included.
PROJECTOR_CSS = """<style>
html { font-size: 20px; }
[data-testid="stSidebar"] { font-size: 0.9rem; }
</style>"""


KEPT_SENTENCE = "_kept_sentence"


def _use_example() -> None:
    st.session_state.sentence = st.session_state.example


def _one_line() -> None:
    st.session_state.sentence = url_state.one_line(st.session_state.sentence)


def sentence_box(writes: bool = True) -> None:
    """The sentence box and its button (inside the sidebar, under the model box, so both are in a 900 px screen's
    first view): for a model of text. writes: the model generates text."""
    # A model that reads images has no sentence box, and Streamlit forgets a box it did not draw: the sentence is
    # kept beside it too, so that switching to the image model and back finds the person's own sentence.
    st.session_state.setdefault("sentence", st.session_state.get(KEPT_SENTENCE, EXAMPLES[0]))
    # No max_chars: the box would silently drop a longer paste. Longer text is cut, with a notice (below).
    # Enter applies it (pages/app.py's script: Enter leaves the box, which commits it), so does Ctrl+Enter, and
    # so does the button (a click leaves the box too); a newline pasted becomes a space.
    st.text_area("English sentence", key="sentence", height=100, on_change=_one_line)
    st.session_state[KEPT_SENTENCE] = st.session_state["sentence"]
    action = "Translate" if writes else "Apply"
    st.button(action, key="apply_sentence", type="primary",
              help="Applies the sentence typed above (so does Enter): every page then shows it.")
    st.caption(f"Type or paste a sentence, then press Enter or {action}.")


def examples_and_decoding(writes: bool = True) -> None:
    """The examples, the decoding choice and the casing fix (inside the sidebar, under the model's description):
    for a model of text. writes: the model generates text (a sentence encoder or a masked language model has no
    decoding to choose)."""
    if policy().serving:        # a visitor learns the limits before meeting them
        st.caption(f"At most {MAX_SENTENCE_CHARS:,} characters, of which the model reads as many tokens as it "
                   "takes (256 for the bundled models); longer text is cut, with a notice.")
    st.selectbox("Examples", EXAMPLES, key="example", on_change=_use_example, index=None,
                 format_func=EXAMPLE_LABELS.get, placeholder="Pick an example sentence…")
    # Kept, disabled, for a model that writes nothing: the choice is still there when a translator is chosen again.
    decoding = st.radio("Decoding", ["greedy", "beam search"], key="decoding", horizontal=True, disabled=not writes,
                        help=term_help("greedy decoding", "beam search") if writes else
                        "This model writes no text, so there is nothing to decode; the choice is kept for the others.")
    if decoding == "beam search":
        st.session_state.setdefault("beam_size", 5)
        st.slider("Beam size", 2, 10, key="beam_size", disabled=not writes)
    st.checkbox("Fix ALL-CAPS / all-lower-case input", value=True, key="fix_casing",
                help="The bundled translators were trained on captions written in sentence case; for them a "
                     "sentence typed all in capitals or all in lower case is fed in sentence case, and the page "
                     "shows what was fed. Other models read the text as typed.")


def render_sidebar() -> None:
    """The model, the sentence and the decoding choice: every page reads them."""
    links = model_links()
    own = None if policy().serving else OWN         # a shared server opens no folder a visitor names
    url_state.restore(links, own, MAX_SENTENCE_CHARS)
    url_state.valid("model", list(links) + [own])
    with st.sidebar:
        # The model, then the sentence: both in the first screen under the page list (at 1400 × 900 too); what the
        # model was trained on and the other choices follow.
        choice = st.selectbox("Model", list(links) + ([own] if own else []), key="model")
        if choice == OWN:
            st.text_input("Checkpoint folder", key="own_model", placeholder="/path/to/checkpoint")
        sentence_area = st.container()
        opened = describe_model(selection().model_path)
        if opened is not None and input_kind(opened) is IMAGE:
            sentence_area.caption(f"{opened.name} reads images: pick or draw a digit on the [Images]({IMAGES_PAGE}) "
                                  "page.")
        else:
            writes = opened is None or isinstance(opened, Generates)
            with sentence_area:
                sentence_box(writes)
            examples_and_decoding(writes)
        url_state.kept("colour_scale", "scale", list(COLOUR_SCALES))
        scale = st.radio("Attention colours", list(COLOUR_SCALES), format_func=COLOUR_SCALES.get, key="colour_scale",
                         help="0–1: every figure on one scale, so figures compare. 0–max: each figure's own largest "
                              "weight is darkest, so a diffuse head's pattern shows; its colour bar or key says the range.")
        url_state.keep("scale", scale)
        url_state.kept("projector", "projector", [True, False], encode=lambda on: "on" if on else "", default=False)
        projector = st.toggle("Projector mode", key="projector",
                              help="For a class: larger type and figure cells, one figure per row. Kept in the "
                                   "address, so a link opens a class's view.")
        url_state.keep("projector", "on" if projector else "")
    fold_sidebar_for_projector(projector)      # the class sees the whole width (pages/components/presentation.py)
    # Per run and per session (a context variable, explorer/figures/common.py): this session's figures only.
    FIGURE_SCALE.set(PROJECTOR_SCALE if projector else 1.0)
    if projector:
        st.html(PROJECTOR_CSS)
    chosen = selection()
    model = links.get(st.session_state.get("model"), chosen.model_path)
    url_state.publish(model, chosen.sentence, chosen.beam_size, chosen.fix_casing, chosen.target_language)


def describe_model(path: str):
    """Under the model box: what it was trained on (when its folder says), and a multilingual model's output
    language (M2M100, NLLB). The model, or None when it cannot be loaded: the page itself says why."""
    try:
        model = cached_model(ModelRef.of(path))
    except ModelError:
        return None
    description = training_description(model)
    if description:
        st.caption(description)
    languages = target_languages(model)
    if not languages:
        st.session_state.pop("target_language", None)
    else:
        if st.session_state.get("target_language") not in languages:
            st.session_state["target_language"] = model.target_language
        st.selectbox("Target language", languages, key="target_language",
                     help="This model translates into many languages; its decoder starts from this language's token.")
    return model
