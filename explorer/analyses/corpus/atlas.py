"""The head atlas: every head of one attention stack on one map (Clark, Khandelwal, Levy & Manning 2019, "What Does
BERT Look At?", §6 and Figure 6).

The distance between two heads is the Jensen–Shannon divergence, in bits, between their attention rows at the same
query of the same sentence, averaged over every query of every sentence (the tokens as the model reads them: special
tokens too; a translator's decoder and cross-attention read its own greedy output). It is 0 for two heads that attend
alike everywhere and at most 1. The heads are laid out in 2-D by metric multidimensional scaling (scikit-learn's MDS
on the precomputed distances, seeded), so heads that attend alike sit close.

The statistics are additive — per head pair, the divergences summed over queries, and the query count — so a corpus
in shards (Ray) gives the one-process map up to float rounding. Beside the map, each head's share of attention on the
first token and the special tokens ([CLS], [SEP], <s>, </s>): the sink share that colours one view of the map.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.analyses.corpus.roles import batches_by_length, read_by
from explorer.analyses.records import Record
from explorer.capture.inputs import InputError
from explorer.models.hooks import capture
from explorer.models.interface import ExplorerModel
from explorer.models.tokenizer import clean_text
from explorer.models.vocabulary import Kind, Side, attention_hook

BATCH = 32
CHUNK = 4_000_000          # elements of the [heads, heads, queries, keys] mixtures held at once (32 MB)


@dataclass
class ReadSentence:
    """One sentence as one stack reads it: the query and key pieces and the captured values, [layers, heads, …]."""
    index: int                                  # its place in the corpus given
    queries: list[str]
    keys: list[str]
    values: dict[str, np.ndarray] = field(default_factory=dict)
    special_keys: np.ndarray | None = None      # [keys] bool: the special tokens ([CLS], [SEP], </s> …)

    def sink_keys(self) -> np.ndarray:
        """The first token and the special tokens."""
        sinks = self.special_keys.copy()
        sinks[0] = True
        return sinks


def stack_kind(model: ExplorerModel, kind: str | None) -> str:
    """The stack asked for, or the model's first (the encoder of a translator, a language model's decoder)."""
    kinds = [k.value for k in Kind if model.layers(k.value)]
    if kind is None:
        return kinds[0]
    if kind not in kinds:
        raise InputError(f"{model.name} has no {kind} attention; it has {', '.join(kinds)}")
    return kind


def read_sentences(model: ExplorerModel, sentences: list[str], kind: str, values: tuple[str, ...] = ("pattern",),
                   batch_size: int = BATCH, progress: Callable[[float], None] | None = None,
                   token_ids: list[list[int] | None] | None = None) -> Iterator[ReadSentence]:
    """Each usable sentence (blank ones are left out) as the stack reads it, batches of similar length at a time
    (yielded in that order: `index` says where each stands in the corpus). token_ids: each sentence's ids as
    prepared (a treebank's words tokenized once; None: left out), instead of the sentences' own encoding."""
    if token_ids is None:
        texts = [(i, clean_text(s)) for i, s in enumerate(sentences)]
        texts = [(i, t) for i, t in texts if t]
        ids = [model.encode(t).ids for _, t in texts]
    else:
        texts = [(i, sentences[i]) for i, row in enumerate(token_ids) if row]
        ids = [token_ids[i] for i, _ in texts]
    role = Kind(kind)
    decodes = model.has("encoder") and model.has("decoder") and role.query_side is Side.TARGET
    with torch.no_grad():
        outputs = model.generate(ids) if decodes else None
    done = 0
    for chunk in batches_by_length(ids, [len(row) for row in ids], batch_size):
        encoder, decoder = read_by(model, [ids[i] for i in chunk], [outputs[i] for i in chunk] if decodes else None)
        with torch.no_grad(), capture(model.hook_names, [attention_hook(kind, "*", value) for value in values]) as cache:
            model.forward(encoder, decoder)
        captured = {value: cache.layers(kind, value).double().cpu().numpy() for value in values}   # a GPU's too
        sides = {Side.SOURCE: encoder, Side.TARGET: decoder if decoder is not None else encoder}
        query_batch, key_batch = sides[role.query_side], sides[role.key_side]
        for row, number in enumerate(chunk):
            queries = int(query_batch.present[row].sum())
            keys = int(key_batch.present[row].sum())
            key_ids = key_batch.ids[row, :keys].tolist()
            special = np.isin(key_ids, list(model.special_ids))
            # [layers, heads, positions …] without the padding: a pattern's queries and keys, q's queries, k's keys
            real = {"pattern": (slice(queries), slice(keys)), "q": (slice(queries),), "k": (slice(keys),)}
            yield ReadSentence(texts[number][0], model.pieces(query_batch.ids[row, :queries].tolist()),
                               model.pieces(key_ids),
                               {value: array[(row, slice(None), slice(None), *real[value])]
                                for value, array in captured.items()}, special)
        done += len(chunk)
        if progress:
            progress(done / max(1, len(ids)))


def entropy_bits(rows: np.ndarray) -> np.ndarray:
    """Shannon entropy in bits over the last axis (0 · log 0 = 0: scipy's entr)."""
    from scipy.special import entr

    return entr(rows).sum(-1) / np.log(2)


def divergence_sums(pattern: np.ndarray) -> np.ndarray:
    """[heads, heads] Jensen–Shannon divergences in bits between every two heads' rows, summed over the queries;
    pattern [layers, heads, queries, keys] (heads flattened layer by layer)."""
    layers, heads, queries, keys = pattern.shape
    rows = pattern.reshape(layers * heads, queries, keys)
    count = len(rows)
    own = entropy_bits(rows)                                                     # [heads, queries]
    sums = np.zeros((count, count))
    step = max(1, CHUNK // max(1, count * count * keys))
    for start in range(0, queries, step):
        part = rows[:, start: start + step]
        mixed = entropy_bits((part[:, None] + part[None, :]) / 2)                # [heads, heads, queries]
        halves = (own[:, None, start: start + step] + own[None, :, start: start + step]) / 2
        sums += (mixed - halves).sum(-1)
    np.fill_diagonal(sums, 0.0)
    return np.maximum(sums, 0.0)           # rounding can leave −1e-16 where two heads agree


def sentence_statistics(read: ReadSentence) -> dict:
    """One sentence's additive statistics: the divergence sums, its queries, and per head the attention summed
    over queries on the sink keys."""
    pattern = read.values["pattern"]
    layers, heads = pattern.shape[:2]
    sink = pattern[..., read.sink_keys()].sum(-1).sum(-1).reshape(layers * heads)
    return {"sums": divergence_sums(pattern), "queries": pattern.shape[2], "sink": sink}


def map_statistics(model: ExplorerModel, sentences: list[str], kind: str, keep_each: bool = False,
                   progress: Callable[[float], None] | None = None) -> dict:
    """The corpus's summed statistics (and, with keep_each, every sentence's divergence sums and queries in corpus
    order, for an interval over sentences)."""
    layers, heads = model.layers(kind), model.heads
    total = {"sums": np.zeros((layers * heads,) * 2), "queries": 0, "sink": np.zeros(layers * heads), "sentences": 0}
    each: dict[int, tuple[np.ndarray, int]] = {}
    for read in read_sentences(model, sentences, kind, progress=progress):
        statistics = sentence_statistics(read)
        total["sums"] += statistics["sums"]
        total["sink"] += statistics["sink"]
        total["queries"] += statistics["queries"]
        total["sentences"] += 1
        if keep_each:
            each[read.index] = (statistics["sums"], statistics["queries"])
    if keep_each:
        total["each"] = [each[index] for index in sorted(each)]
    return total


def add_statistics(parts: list[dict]) -> dict:
    """Shards' statistics added up (plain lists, as a Ray worker returns them)."""
    return {"sums": sum(np.asarray(part["sums"]) for part in parts), "queries": sum(part["queries"] for part in parts),
            "sink": sum(np.asarray(part["sink"]) for part in parts), "sentences": sum(part["sentences"] for part in parts)}


def layout(distance: np.ndarray, seed: int = 0) -> np.ndarray:
    """[heads, 2] positions whose distances approximate the given ones (metric MDS, seeded)."""
    from sklearn.manifold import MDS

    if len(distance) < 3:
        return np.column_stack([np.arange(len(distance), dtype=float), np.zeros(len(distance))])
    return MDS(n_components=2, metric="precomputed", random_state=seed, n_init=4, init="random",
               normalized_stress="auto").fit_transform(distance)


@dataclass
class MappedHead(Record):
    name: str           # enc.1.7 (the map's label; `spec` the same, as every command names a head)
    spec: str
    kind: str
    layer: int
    head: int
    x: float
    y: float
    sink_share: float   # mean over queries of the attention on the first token and the special tokens


@dataclass
class HeadMap(Record):
    """`python -m explorer atlas --json`: the heads of one stack, their map and the distance between every two."""
    model: str
    kind: str
    sentences: int
    queries: int
    heads: list[MappedHead]
    distance: list[list[float]]     # bits, over the heads in the order listed
    unit: str = "bits (Jensen–Shannon divergence, mean over queries)"
    NESTED = {"heads": MappedHead}

    def matrix(self) -> np.ndarray:
        return np.asarray(self.distance, dtype=float)

    def table(self):
        import pandas as pd

        return pd.DataFrame([head.to_json() for head in self.heads]).set_index("name").drop(columns="spec")


def head_map(model: ExplorerModel, kind: str, statistics: dict) -> HeadMap:
    """The map of a stack's heads from the corpus's summed statistics."""
    queries = max(1, statistics["queries"])
    distance = np.asarray(statistics["sums"]) / queries
    distance = (distance + distance.T) / 2
    points = layout(distance)
    heads = model.heads
    sink = np.asarray(statistics["sink"]) / queries
    names = [f"{Kind(kind).short}.{n // heads}.{n % heads}" for n in range(len(distance))]
    mapped = [MappedHead(names[n], names[n], kind, n // heads, n % heads,
                         round(float(points[n, 0]), 4), round(float(points[n, 1]), 4), round(float(sink[n]), 4))
              for n in range(len(distance))]
    return HeadMap(model.name, kind, statistics["sentences"], statistics["queries"], mapped,
                   np.round(distance, 6).tolist())


def layer_pairs(count: int, heads: int) -> tuple[np.ndarray, np.ndarray]:
    """[count, count] masks of the pairs above the diagonal: two heads of one layer, two of different layers."""
    layer = np.arange(count) // heads
    upper = np.triu(np.ones((count, count), dtype=bool), 1)
    return upper & (layer[:, None] == layer[None, :]), upper & (layer[:, None] != layer[None, :])


def layer_grouping(each: list[tuple[np.ndarray, int]], heads: int, resamples: int = 1000, seed: int = 0) -> dict:
    """Do heads of the same layer attend more alike than heads of different layers? The mean distance between two
    heads of one layer and between two of different layers, and the difference (across − within) with a
    sentence-bootstrap 95% interval (ratio_intervals over each sentence's summed divergences and its queries)."""
    from explorer.analyses.corpus.intervals import ratio_intervals, rounded
    from explorer.analyses.records import Interval

    within, across = layer_pairs(len(each[0][0]), heads)
    within_sums = np.array([sums[within].mean() for sums, _ in each])
    across_sums = np.array([sums[across].mean() for sums, _ in each])
    queries = np.array([float(q) for _, q in each])
    low, high = ratio_intervals(across_sums - within_sums, queries, resamples, seed)
    mean = lambda values: rounded(values.sum() / queries.sum())        # noqa: E731
    return {"within": mean(within_sums), "across": mean(across_sums), "pairs_within": int(within.sum()),
            "pairs_across": int(across.sum()),
            "interval": Interval("mean distance across layers − within a layer, bits", mean(across_sums - within_sums),
                                 rounded(low), rounded(high), len(each), "sentences", resamples=resamples, seed=seed)}
