"""The Pieces / Words choice on every attention view (URL `units=`): the model's own pieces, or words as Clark et
al. 2019 aggregate them (explorer/capture/words.py: attention to a word is the sum over its pieces, from a word the mean)."""

from __future__ import annotations

import streamlit as st

from explorer.capture.trace import Trace
from explorer.capture.words import word_trace
from explorer.pages.components import url_state

UNITS = {"pieces": "pieces", "words": "words"}


def attention_units(key: str, where=st) -> str:
    """"pieces" or "words", shared by the pages through the URL's `units=` (left out for pieces, the default)."""
    def encode(units: str) -> str:
        return "" if units == "pieces" else units

    url_state.kept(key, "units", list(UNITS), encode)
    units = where.radio("Units", list(UNITS), format_func=UNITS.get, key=key, horizontal=True,
                        help="Clark et al. 2019, “What does BERT look at?”: a word's pieces as one token. "
                             "Attention to a word is the sum over its pieces, from a word the mean of its pieces' "
                             "rows, so each row still sums to 1 (norms are summed the same way). Punctuation and "
                             "special tokens are words of their own; an apostrophe inside a word (didn't, it's) "
                             "stays in it.")
    url_state.keep("units", units, encode)
    return units


def in_units(trace: Trace, model, units: str) -> Trace:
    """The trace as the chosen units show it."""
    return word_trace(model, trace) if units == "words" else trace
