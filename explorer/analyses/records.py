"""Dataclasses that are read and written as JSON objects: Record.to_json() gives the keys in the order the fields
are declared, and Record.from_json() reads them back. Results of corpus jobs (explorer/analyses/corpus/results.py) are
records, so pages and the command line read fields while the files on disk keep their exact form.

- A field named in OPTIONAL is left out of the JSON while it is None: older files (the shipped ones among them)
  lack keys that newer ones have, and a file read and written again must come out as it was.
- Keys a class does not know are kept in `extra` and written after the known ones (e.g. the command line's
  "distributed" note in a report someone saved).
- NESTED says which fields hold records: `Class`, `list_of(Class)` or `dict_of(Class)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from explorer.models.errors import ExplorerError
from explorer.models.vocabulary import Kind


class RecordError(ExplorerError):
    """A JSON object that is not the record it should be (a saved report someone gives the explorer)."""


@dataclass(frozen=True)
class list_of:
    record: type


@dataclass(frozen=True)
class dict_of:
    record: type


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _typed(value: Any, nested) -> Any:
    if value is None:
        return None
    if isinstance(nested, list_of):
        return [nested.record.from_json(item) for item in value]
    if isinstance(nested, dict_of):
        return {key: nested.record.from_json(item) for key, item in value.items()}
    return nested.from_json(value)


@dataclass
class Record:
    OPTIONAL: ClassVar[tuple[str, ...]] = ()
    NESTED: ClassVar[dict[str, Any]] = {}

    extra: dict = field(default_factory=dict, kw_only=True, repr=False)

    def to_json(self) -> dict:
        document = {}
        for item in fields(self):
            if item.name == "extra":
                continue
            value = getattr(self, item.name)
            if value is None and item.name in self.OPTIONAL:
                continue
            document[item.name] = _plain(value)
        document.update(self.extra)
        return document

    @classmethod
    def from_json(cls, document: dict, source: str | None = None):
        """The record a JSON object holds. source: the file it came from when a person gave it (a saved report, a
        shipped file someone may have edited): a malformed one is then a RecordError naming the file. Without it
        the object is the explorer's own, and a malformed one is a bug that keeps its traceback (a TypeError)."""
        if isinstance(document, cls):
            return document
        try:
            if not isinstance(document, dict):
                raise TypeError(f"not a {cls.__name__}: a JSON object was expected")
            known = {item.name for item in fields(cls)} - {"extra"}
            values = {name: _typed(value, cls.NESTED[name]) if name in cls.NESTED else value
                      for name, value in document.items() if name in known}
            return cls(**values, extra={name: value for name, value in document.items() if name not in known})
        except TypeError as error:         # a required key missing, or an object where a list was expected
            if source is None:
                raise
            raise RecordError(f"{source}: not a {cls.__name__} ({error})") from None


@dataclass
class HeadScores(Record):
    """One number per head of each attention kind the model has: scores {kind: [layers, heads]}, the mean over
    `sentences` sentences. What a registered analysis of heads returns (explorer/analyses/registry.py); the
    figures draw it as a layers × heads map a kind (explorer/figures/registered.py)."""

    measure: str                        # what the number is, with its unit: "entropy (bits)"
    scores: dict[Kind, np.ndarray]
    sentences: int = 1
    reading: str = ""                   # how to read it: what a low and a high value mean

    def __post_init__(self) -> None:
        self.scores = {Kind(kind): np.asarray(values, dtype=float) for kind, values in self.scores.items()}

    def table(self):
        """A row a layer of each kind (enc.0, dec.1 …), a column a head (h0, h1 …): what the command line prints."""
        import pandas as pd

        frames = [pd.DataFrame(values, index=[f"{kind.short}.{layer}" for layer in range(len(values))],
                               columns=[f"h{head}" for head in range(values.shape[1])])
                  for kind, values in self.scores.items()]
        return pd.concat(frames) if frames else pd.DataFrame()


RESAMPLES = 1000
PERCENTILE, WILSON = "percentile bootstrap", "Wilson score"


@dataclass
class Interval(Record):
    """A mean over `count` items (named by `unit`: "sentences", "arcs", "seeds") and its 95% interval; mean, low and
    high None when there was nothing to measure. In JSON the count is keyed by its unit ({"sentences": 100})."""

    what: str
    mean: float | None
    low: float | None
    high: float | None
    count: int = 0
    unit: str = "sentences"
    method: str = PERCENTILE
    resamples: int | None = RESAMPLES
    seed: int | None = 0

    def to_json(self) -> dict:
        document = {"what": self.what, "mean": self.mean, "low": self.low, "high": self.high, self.unit: self.count,
                    "method": self.method}
        if self.method == PERCENTILE:
            document["resamples"] = self.resamples
            if self.mean is not None:
                document["seed"] = self.seed
        return document

    @classmethod
    def from_json(cls, document: dict, source: str | None = None) -> Interval:
        if isinstance(document, Interval):
            return document
        known = {"what", "mean", "low", "high", "method", "resamples", "seed"}
        [unit] = [key for key in document if key not in known] or ["sentences"]
        return cls(document["what"], document["mean"], document["low"], document["high"], document.get(unit, 0), unit,
                   document.get("method", PERCENTILE), document.get("resamples"), document.get("seed"))


@dataclass
class IntervalParts(Record):
    """A verdict of several parts, each called on its own interval's lower end (a card's `interval`)."""

    what: str
    parts: dict[str, Interval]

    def __post_init__(self) -> None:
        self.parts = {name: Interval.from_json(part) for name, part in self.parts.items()}
