"""Which word does one word look at, in every head: the lecture's question ("The animal didn't cross the street
because it was too tired.": where does “it” look?) as a table, one row per layer and head of one attention kind.

Over words as the explorer's word view makes them (explorer/capture/words.py, Clark et al. 2019): attention **to**
a word is the sum over its pieces, **from** a word the mean of its pieces' rows. Unlike word_focus.py's answer,
which names only other content words, this table excludes nothing: each head's top word is the argmax of the
whole row, so a head that parks its weight on </s>, [CLS], a full stop or the word itself says so.

In a notebook:

    table = explorer.word_focus_table(model, explorer.trace_sentence(model, sentence), "it")
    table.counts()          # {"animal": 3, "</s>": 40, …}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from explorer.analyses.sentence.word_focus import label, reading_kind
from explorer.capture.head_sets import HeadSpec
from explorer.capture.inputs import InputError
from explorer.capture.trace import Trace
from explorer.capture.words import word_trace
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import Kind, Side


@dataclass(frozen=True)
class HeadFocus:
    spec: str               # "enc.3.1", as head lists name it
    kind: str
    layer: int
    head: int
    top_word: str
    top_position: int       # the top word's index among the key side's words
    weight: float           # the weight on it (a share of the row, 0 … 1)


@dataclass(frozen=True)
class FocusTable:
    sentence: str
    kind: str
    word: str
    position: int           # the word's index among the query side's words
    occurrence: int         # which of its occurrences (1: the first)
    occurrences: int
    heads: list[HeadFocus]

    def counts(self) -> dict[str, int]:
        """Top word → how many heads pick it, most picked first (a word written twice counts as one text)."""
        return dict(Counter(row.top_word for row in self.heads).most_common())

    def to_json(self) -> dict:
        return {"sentence": self.sentence, "word": self.word, "position": self.position,
                "occurrence": self.occurrence, "occurrences": self.occurrences, "kind": self.kind,
                "heads": [vars(row) for row in self.heads], "top_word_counts": self.counts()}


def query_words(words: Trace, model: ExplorerModel, kind: str) -> list[str]:
    """The words the chosen word is looked up among: the queries of `kind`. A decoder-only model's decoder reads
    the prompt and then its own continuation; only the prompt is the sentence a person typed."""
    labels = [label(word) for word in words.query_tokens(kind)]
    if Kind(kind).is_self and not model.has("encoder"):
        return labels[: words.first_step_position + 1]
    return labels


def word_focus_table(model: ExplorerModel, trace: Trace, word: str, kind: str | None = None,
                     occurrence: int = 1) -> FocusTable:
    """For every layer and head of `kind` (default: the self-attention that reads the sentence), the word that
    `word` (its `occurrence`-th appearance, case-insensitive) gives the most weight, and that weight."""
    kind = kind or reading_kind(model)
    if not model.has(kind):
        raise InputError(f"--kind {kind}: {model.name} has no {kind} attention (it has {', '.join(model.kinds)})")
    words = word_trace(model, trace)
    queries, keys = query_words(words, model, kind), [label(key) for key in words.key_tokens(kind)]
    found = [index for index, query in enumerate(queries) if query.lower() == word.strip().lower()]
    if not found:
        # a translation's decoder reads the output
        side = "output" if Kind(kind).query_side is Side.TARGET and model.has("encoder") else "sentence"
        raise InputError(f"--word {word!r}: not a word of the {side}; its words are {', '.join(queries)}")
    if not 1 <= occurrence <= len(found):
        raise InputError(f"--occurrence {occurrence}: {word!r} occurs {len(found)} time(s)")
    position = found[occurrence - 1]
    rows = words.pattern(kind)[:, :, position, :]            # [layers, heads, key words]
    top = rows.argmax(-1)
    heads = [HeadFocus(str(HeadSpec(kind, layer, head)), kind, layer, head, keys[top[layer, head]], int(top[layer, head]),
                       float(rows[layer, head, top[layer, head]]))
             for layer in range(rows.shape[0]) for head in range(rows.shape[1])]
    return FocusTable(trace.text, kind, queries[position], position, occurrence, len(found), heads)
