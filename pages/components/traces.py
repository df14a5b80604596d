"""The chosen sentence's trace on the chosen model, as a page reads it: from the trace service's cache, with a message
instead when the model cannot read the input, and the notices about the sentence once per page."""

from __future__ import annotations

import streamlit as st

from explorer.capture.head_sets import HeadSet
from explorer.capture.inputs import InputError, prepare_source
from explorer.capture.trace import Trace
from explorer.models.interface import ExplorerModel
from explorer.pages.components.caches import cached_trace
from explorer.pages.components.notices import warn_if_truncated
from explorer.pages.components.session import chosen_ref, current_checkpoint, selection, view_pruned


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
        trace = cached_trace(chosen_ref(), chosen.sentence, chosen.beam_size, pruned, chosen.fix_casing,
                             checkpoint.target_language)
    except InputError as error:
        st.info(str(error))
        return checkpoint, None
    if notices:
        warn_if_truncated(trace, checkpoint)
    return checkpoint, trace
