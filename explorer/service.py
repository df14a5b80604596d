"""The trace service: models, traces and beam trees opened and cached once, for the app, a notebook and the command
line alike. Nothing here knows about Streamlit; the app keeps one service per server process
(explorer/pages/components/caches.py) and adds only its spinners.

Models are shared by every caller, which is safe because hooks and head masks are per call. Traces and beam trees are
the big results (a 250-token sentence's trace is ~70 MB): they are held in caches bounded by bytes as well as
entries, read-only (explorer/capture/memo.py), and keyed by everything that changes them, so one person's choices
never reach another's results.

    >>> service = TraceService()
    >>> trace = service.trace(ModelRef.of("en-de-h8"), "A dog runs.")
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from explorer.capture.decoding_steps import beam_tree
from explorer.capture.head_sets import HeadSet
from explorer.capture.memo import BoundedCache
from explorer.capture.trace import Trace, trace_sentence
from explorer.models.decoding import BeamResult
from explorer.models.interface import ExplorerModel, target_languages
from explorer.models.loader import local_folder, open_model

# 256 MB holds 78 traces of 45 words on h8 (3.3 MB each), room for a class's sentences; with 512 MB the cache was
# still filling after 100 distinct sentences, and a server's memory after 1,000 stood 17–24% over its memory after
# 100 (benchmarks/class_load.py --distinct).
TRACE_MEGABYTES = 256
MAX_MODELS = 8


class ModelRef(NamedTuple):
    """What identifies a model's weights: its folder (or hub id, or installed model's name) and the weights' modified
    time, so a folder retrained in place is opened anew. A tuple, so any cache can key on it."""

    path: str
    modified: float

    @classmethod
    def of(cls, path: str | Path) -> ModelRef:
        return cls(str(path), weights_modified(str(path)))


def weights_modified(path: str) -> float:
    """The modified time of the model's safetensors weights, wherever its name leads (an installed model, a bundled
    model's bare name, a hub id in the local cache, a folder); 0.0 when there are none here (a hub id not yet
    downloaded, a mistyped folder: opening it says why)."""
    weights = local_folder(path) / "model.safetensors"
    return weights.stat().st_mtime if weights.is_file() else 0.0


class TraceService:
    """Open models and compute traces and beam trees once each, whoever asks.
    opener: how a folder or hub id becomes a model (a served explorer's never downloads for a visitor).
    trace_megabytes: the traces' budget."""

    def __init__(self, opener: Callable[[str], ExplorerModel] = open_model, trace_megabytes: int = TRACE_MEGABYTES):
        self.opener = opener
        self.traces = BoundedCache(trace_megabytes * 2**20, max_entries=256)
        self.beam_trees = BoundedCache(64 * 2**20, max_entries=64)
        self._models: OrderedDict[ModelRef, ExplorerModel] = OrderedDict()
        self._loading = threading.Lock()

    def model(self, ref: ModelRef, target_language: str = "") -> ExplorerModel:
        """The model, opened once by whoever asks first; one load at a time (a second would only share the disk and
        the cores), and a model already open is returned without waiting behind another one's load. A multilingual
        model translating into target_language is a light view of the same weights."""
        model = self._models.get(ref)
        if model is None:
            with self._loading:
                if ref not in self._models:
                    self._models[ref] = self.opener(ref.path)
                    while len(self._models) > MAX_MODELS:
                        self._models.popitem(last=False)
                model = self._models[ref]
        return model.for_target_language(target_language) if target_language in target_languages(model) else model

    def is_open(self, ref: ModelRef) -> bool:
        return ref in self._models

    @staticmethod
    def trace_key(ref: ModelRef, sentence: str, beam_size: int = 1, pruned: HeadSet = (), fix_casing: bool = True,
                  target_language: str = "") -> tuple:
        return ref, sentence, beam_size, tuple(pruned), fix_casing, target_language

    def trace(self, ref: ModelRef, sentence: str, beam_size: int = 1, pruned: HeadSet = (), fix_casing: bool = True,
              target_language: str = "") -> Trace:
        """The sentence's trace (beam_size 1: greedy) with these heads pruned."""
        key = self.trace_key(ref, sentence, beam_size, pruned, fix_casing, target_language)
        return self.traces.get(key, lambda: trace_sentence(self.model(ref, target_language), sentence,
                                                           beam_size=beam_size, pruned=pruned,
                                                           fix_casing=fix_casing))

    @staticmethod
    def beam_key(ref: ModelRef, text: str, beam_size: int, alpha: float, target_language: str = "",
                 pruned: HeadSet = ()) -> tuple:
        return ref, text, beam_size, alpha, target_language, tuple(pruned)

    def beam_tree(self, ref: ModelRef, text: str, beam_size: int, alpha: float, target_language: str = "",
                  pruned: HeadSet = ()) -> BeamResult:
        """Every live beam at every step: it depends only on these, so moving a step slider never searches again."""
        key = self.beam_key(ref, text, beam_size, alpha, target_language, pruned)
        return self.beam_trees.get(key, lambda: beam_tree(self.model(ref, target_language), text, beam_size, alpha,
                                                          pruned))
