"""What the person chose (model, sentence, decoding), read from st.session_state (one per browser session): the
offered models, the chosen one opened through the trace service (explorer/pages/components/caches.py), and the
heads pruned in this view."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

import explorer.settings as settings
from explorer.capture.examples import EXAMPLES as CAPTION_EXAMPLES
from explorer.capture.examples import SENTENCES, label
from explorer.capture.head_sets import HeadSet, HeadSpecError, head_set, parse_heads
from explorer.capture.input_kinds import IMAGE, TEXT, input_kind
from explorer.models.installed import INSTALLED
from explorer.models.interface import AttentionModel, ExplorerModel, ModelError
from explorer.pages.components.access import policy
from explorer.pages.components.caches import cached_model
from explorer.pages.registry import PAGES
from explorer.service import ModelRef

BUNDLED = {model.label: model.folder for model in settings.BUNDLED}
IMAGE_MODEL = "Digits ViT (digits-vit)"     # what the Images page draws when the open model reads text
IMAGES_PAGE = next(p.name for p in PAGES if p.reads == IMAGE.name)     # where a model that reads images is sent
OWN = "Your own checkpoint folder…"      # a free-text folder box: on one's own machine only, never when served
# Real pretrained models installed as packages (models/installed.py), offered when installed: label → name.
INSTALLED_MODELS = {f"{name} (pretrained)": name for name in INSTALLED}
DEFAULT_MODEL = "8 heads (en-de-h8)"
EXAMPLES = SENTENCES        # the sidebar's example sentences
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


def chosen_ref() -> ModelRef:
    """What identifies the chosen model's weights."""
    return ModelRef.of(selection().model_path)


def ref_of(model: AttentionModel) -> ModelRef:
    """What identifies an open model's weights (its folder, as it was opened from)."""
    return ModelRef.of(str(model.path))


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
        return cached_model(ModelRef.of(chosen.model_path), chosen.target_language)
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
        return cached_model(ModelRef.of(path)), False
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
