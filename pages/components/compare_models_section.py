"""The Compare page's models: which two or three to compare (the open model first, then the offered ones, and on
one's own machine any folders or hub ids typed in), each loaded with its trace of the current sentence, and
their outputs side by side."""

from __future__ import annotations

import streamlit as st

from explorer.capture.input_kinds import TEXT, input_kind
from explorer.capture.inputs import InputError
from explorer.models.installed import INSTALLED
from explorer.models.interface import Embeds, ModelError
from explorer.pages.components import url_state
from explorer.pages.components.access import policy, quoted, refuse
from explorer.pages.components.caches import cached_model, cached_trace
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.notices import greedy_notice, pruning_notice, warn_if_truncated
from explorer.pages.components.session import current_checkpoint, offered_models, partner_model, selection
from explorer.service import ModelRef

MOST = 3


def chosen_models() -> tuple[dict, dict, list[str]]:
    """The models chosen (label → model), their traces of the current sentence (label → trace) and their labels in
    order; the page stops here while fewer than two are chosen or load."""
    current_checkpoint()            # a model that reads images is sent to the Images page
    offered = offered_models()
    # Compare starts from the model that is open: it comes first, then the other offered models.
    opened = selection().model_path
    candidates = {label: path for label, path in offered.items() if path == opened}
    if not candidates and opened:
        candidates[f"open model ({opened})"] = opened
    candidates.update(offered)
    if policy().serving:        # a shared server opens only the models its host offered
        if url_state.saved("compare_others"):
            refuse(f"This server compares only its own models, not {quoted(url_state.saved('compare_others'))}.",
                   f"compare models {quoted(url_state.saved('compare_others'))}")
            url_state.keep("compare_others", "")
    else:
        url_state.kept_text("compare_others", "compare_others")
        others = st.text_area("More models to offer: folders (ours or Hugging Face) or cached hub ids, one per line",
                              key="compare_others", height=68, placeholder="/path/to/opus-mt-en-de")
        url_state.keep("compare_others", others.strip())
        candidates.update({line.strip(): line.strip() for line in others.splitlines() if line.strip()})
    url_state.kept_list("compare_models", "compare", list(candidates))
    # The open model first; a pretrained one beside the bundled 8-head model (the lecture's comparison), else the
    # bundled models with 8, 2 and 1 heads.
    partner = partner_model(current_checkpoint())
    pretrained = opened in INSTALLED and partner is not None and partner[0] in candidates
    default = [next(iter(candidates)), partner[0]] if pretrained else list(candidates)[:MOST]
    labels = st.multiselect("Models (two or three)", list(candidates), default=default, key="compare_models",
                            max_selections=MOST)
    if partner is not None and partner[0] not in labels and not pretrained:
        st.caption(f"A real pretrained encoder: add “{partner[0]}” to compare its heads with these on the same "
                   "sentence (encoder self-attention).")
    url_state.keep("compare", "|".join(labels))
    if len(labels) < 2:
        st.info("Choose at least two models to compare (the bundled models are models/en-de-h1, -h2 and -h8"
                + ("" if policy().serving else "; add folders or hub ids above") + ").")
        st.stop()

    chosen = selection()
    models, traces = {}, {}
    for label in labels:
        path = candidates[label]
        try:
            language = chosen.target_language if path == chosen.model_path else ""     # the open model as the sidebar has it
            models[label] = cached_model(ModelRef.of(path), language)
            if input_kind(models[label]) is not TEXT:
                st.info(f"{label} reads {input_kind(models[label]).reads}: "
                        "Compare sets models of text side by side on a sentence.")
                del models[label]
                continue
            traces[label] = cached_trace(ModelRef.of(path), chosen.sentence, 1, fix_casing=chosen.fix_casing,
                                         target_language=language)
        except ModelError as error:
            st.error(f"{label} cannot be loaded: {error}")
        except InputError as error:
            st.info(str(error))
            st.stop()
    labels = list(models)
    if len(labels) < 2:
        st.stop()
    warn_if_truncated(traces[labels[0]], models[labels[0]])
    pruning_notice(current_checkpoint(), "full", "the models compared have different heads (8, 2, 1), so heads pruned in one "
                   "have no counterpart in the others; each is shown as trained.")
    greedy_notice("the models are compared on the same footing, each writing its most likely token at every step.")
    return models, traces, labels


def show_outputs(models: dict, traces: dict, labels: list[str]) -> None:
    """Each model's output (and its test BLEU when its folder says it), a column each."""
    for column, label in zip(st.columns(len(labels)), labels):
        info = models[label].info.get("scores", {}).get("test_2016_flickr", {})
        with column:
            st.subheader(label)
            st.caption(traces[label].output_title)
            st.text(traces[label].output_text or ("(no text: one vector for the sentence, its embedding)"
                                                  if isinstance(models[label], Embeds)
                                                  else "(a masked language model: no output text)"))
            if info:
                st.caption(f"test BLEU greedy {info.get('bleu_greedy')}, beam 5 {info.get('bleu_beam5')}",
                           help=term_help("BLEU", "greedy decoding", "beam search"))
