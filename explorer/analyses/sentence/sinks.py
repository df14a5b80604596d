"""Attention sinks: heads that park their attention on tokens that carry no content of their own.

Clark, Khandelwal, Levy & Manning (2019, "What Does BERT Look At?", §3) found BERT's heads putting much of their
attention on [SEP] and on punctuation; Xiao, Tian, Chen, Han & Lewis (2023, "Efficient Streaming Language Models with
Attention Sinks") on the first token. Kobayashi et al. (2020) showed that such weights mostly vanish by norm
(‖α·f(x)‖, explorer/analyses/sentence/norms.py): the sink's transformed value is short, so the query is barely moved.

Per head and attention kind, the share of attention (each query's row scaled to sum 1, then averaged over the
queries: norms.share_on) on three disjoint sets of keys: the first token; end-of-sentence and the other special
tokens ([SEP], </s>); punctuation (norms.frequent_keys' rule). Beside it, the share uniform attention would give
(`chance`: a short sentence's full stop is a large share of it), and the same share by norm.

A head is a **sink head** when its share by weight on the three together is at least SINK_THRESHOLD = 0.5 and at
least OVER_CHANCE = 2 times what uniform attention would give: then most of what its queries attend to, on average,
is a token that carries nothing, far more than chance. On Multi30k captions uniform attention gives these tokens
about 0.2 (docs/analyses.md, "Attention sinks"), so 0.5 decides; in a four-token sentence ("A dog." + </s>) three tokens are
sinks and uniform attention alone gives 0.75, so no head there can be told from chance.

Tallies are additive (sums and counts per head), so a corpus is a sum over its sentences.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from explorer.analyses.sentence.norms import frequent_keys, share_on
from explorer.capture.head_sets import HeadSpec
from explorer.capture.trace import Trace, trace_sentence
from explorer.models.interface import ExplorerModel

SINK_THRESHOLD = 0.5
OVER_CHANCE = 2.0
CATEGORIES = {"first": "first token", "special": "end of sentence, [SEP] and other special tokens",
              "punctuation": "punctuation"}
VALUES = {"weight": "pattern", "norm": "norm"}     # the shares' names → the trace's arrays


def key_ids(trace: Trace, kind: str) -> list[int]:
    return trace.key_ids(kind)


def sink_keys(model: ExplorerModel, trace: Trace, kind: str) -> dict[str, list[int]]:
    """The key positions of each category (disjoint: a special first token counts as the first token)."""
    ids = key_ids(trace, kind)
    frequent = [position for position in frequent_keys(model, trace, kind) if position > 0]
    return {"first": [0] if ids else [],
            "special": [position for position in frequent if ids[position] in model.special_ids],
            "punctuation": [position for position in frequent if ids[position] not in model.special_ids]}


def head_shares(matrix: np.ndarray, keys: list[int]) -> np.ndarray:
    """[layers, heads, query, key] → [layers, heads]: each head's share on the keys (norms.share_on)."""
    return np.array([[share_on(matrix[layer, head], keys) for head in range(matrix.shape[1])]
                     for layer in range(matrix.shape[0])])


@dataclass
class SinkTally:
    """Sums over sentences, per kind: shares [layers, heads] per value and category, chance per category, and how
    often each key was a head's largest sink (its label)."""
    sentences: int = 0
    shares: dict[str, dict[str, dict[str, np.ndarray]]] = field(default_factory=dict)  # kind → value → category
    chance: dict[str, dict[str, float]] = field(default_factory=dict)                   # kind → category
    tops: dict[tuple[str, int, int], Counter] = field(default_factory=dict)             # head → label counts

    def __add__(self, other: SinkTally) -> SinkTally:
        if not self.sentences:
            return other
        if not other.sentences:
            return self
        shares = {kind: {value: {category: self.shares[kind][value][category] + other.shares[kind][value][category]
                                 for category in CATEGORIES} for value in VALUES} for kind in self.shares}
        chance = {kind: {category: self.chance[kind][category] + other.chance[kind][category]
                         for category in CATEGORIES} for kind in self.chance}
        tops = {head: self.tops.get(head, Counter()) + other.tops.get(head, Counter())
                for head in self.tops.keys() | other.tops.keys()}
        return SinkTally(self.sentences + other.sentences, shares, chance, tops)


def sentence_sinks(model: ExplorerModel, trace: Trace, kinds: tuple[str, ...] | None = None) -> SinkTally:
    """One sentence's tally, every attention kind of the trace (or those given)."""
    shares, chance, tops = {}, {}, {}
    for kind, values in trace.attention.items():
        if kinds is not None and kind not in kinds:
            continue
        keys = sink_keys(model, trace, kind)
        shares[kind] = {value: {category: head_shares(values.value(array), keys[category]) for category in CATEGORIES}
                        for value, array in VALUES.items()}
        allowed = trace.masks[kind].astype(np.float64)          # uniform over the keys a query may see
        chance[kind] = {category: share_on(allowed, keys[category]) for category in CATEGORIES}
        every = sorted(position for positions in keys.values() for position in positions)
        if every:
            labels = trace.key_tokens(kind)
            pattern = values.pattern[..., every].mean(axis=-2)             # [layers, heads, sink keys]
            for (layer, head), top in np.ndenumerate(pattern.argmax(axis=-1)):
                tops[(kind, layer, head)] = Counter({labels[every[top]]: 1})
    return SinkTally(1, shares, chance, tops)


def sink_rows(tally: SinkTally, threshold: float = SINK_THRESHOLD) -> list[dict]:
    """One row per head, means over the tally's sentences: its shares by weight and by norm (total and per
    category), chance, the most frequent largest sink, and whether it is a sink head by weight and by norm."""
    rows = []
    count = max(tally.sentences, 1)
    for kind, by_value in tally.shares.items():
        layers, heads = by_value["weight"]["first"].shape
        chance = {category: tally.chance[kind][category] / count for category in CATEGORIES}
        for layer in range(layers):
            for head in range(heads):
                row = {"spec": str(HeadSpec(kind, layer, head)), "kind": kind, "layer": layer, "head": head}
                for value in VALUES:
                    parts = {category: float(by_value[value][category][layer, head]) / count for category in CATEGORIES}
                    row[value] = sum(parts.values())
                    row.update({f"{value}_{category}": share for category, share in parts.items()})
                row["chance"] = sum(chance.values())
                top = tally.tops.get((kind, layer, head))
                row["token"] = top.most_common(1)[0][0] if top else ""
                bar = max(threshold, OVER_CHANCE * row["chance"])
                row["sink"], row["sink_by_norm"] = row["weight"] >= bar, row["norm"] >= bar
                rows.append(row)
    return rows


def sinks(model: ExplorerModel, trace: Trace, threshold: float = SINK_THRESHOLD,
          kinds: tuple[str, ...] | None = None) -> list[dict]:
    """Every head's sink shares on one traced sentence (sink_rows)."""
    return sink_rows(sentence_sinks(model, trace, kinds), threshold)


def sink_notes(model: ExplorerModel, trace: Trace, kind: str) -> dict[tuple[int, int], str]:
    """(layer, head) → "sink 0.83 · norm 0.12" for the sink heads of one kind: the every-head grid's flags."""
    return {(row["layer"], row["head"]): f"sink {row['weight']:.2f} · norm {row['norm']:.2f}"
            for row in sinks(model, trace, kinds=(kind,)) if row["sink"]}


def corpus_sinks(model: ExplorerModel, sentences: list[str], threshold: float = SINK_THRESHOLD,
                 progress: Callable[[float], None] | None = None) -> dict:
    """Every head's shares averaged over sentences (each traced greedily: decoder and cross-attention read the
    model's own output). Blank lines are left out."""
    started = time.perf_counter()
    texts = [sentence for sentence in sentences if sentence.strip()]
    tally = SinkTally()
    for number, text in enumerate(texts, start=1):
        tally = tally + sentence_sinks(model, trace_sentence(model, text))
        if progress:
            progress(number / len(texts))
    rows = sink_rows(tally, threshold)
    return {"model": model.name, "sentences": tally.sentences, "threshold": threshold, "heads": rows,
            "sink_heads": [row["spec"] for row in rows if row["sink"]],
            "sink_heads_by_norm": [row["spec"] for row in rows if row["sink_by_norm"]],
            "seconds": round(time.perf_counter() - started, 2)}
