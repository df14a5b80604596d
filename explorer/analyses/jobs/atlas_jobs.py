"""The head atlas's corpus jobs (registered like the others, so Ray workers run them too): `atlas`, the map of a
stack's heads (explorer/analyses/corpus/atlas.py), and `search-heads` (explorer/analyses/corpus/head_search.py).
A shard is a consecutive run of sentences; its statistics are sums (the atlas) or per-sentence rows in corpus order
(the search, whose intervals resample sentences), so the shards' merge is the one-process result up to rounding."""

from __future__ import annotations

import numpy as np

from explorer.analyses.corpus.atlas import HeadMap, add_statistics, head_map, map_statistics
from explorer.analyses.corpus.head_search import HeadSearch, merged_statistics, search_result, search_statistics
from explorer.analyses.jobs.corpus_jobs import corpus_key
from explorer.analyses.jobs.distributed import shards
from explorer.analyses.jobs.job_registry import Progress, corpus_job


def sentence_shards(inputs: dict, options: dict, parts: int) -> list[dict]:
    """Consecutive runs of the sentences (and of their trees, for a search over a treebank)."""
    sentences, trees = inputs["sentences"], inputs.get("trees")
    return [dict(options, sentences=sentences[part.start: part.stop], first=part.start,
                 trees=trees[part.start: part.stop] if trees is not None else None)
            for part in (shards(len(sentences), parts) if parts > 1 else [range(len(sentences))])]


@corpus_job("atlas", read=HeadMap.from_json)
class Atlas:
    """Inputs: sentences. Options: kind (the stack)."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs, options)

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        return sentence_shards(inputs, options, parts)

    def run(model, shard: dict, progress: Progress = None) -> dict:
        statistics = map_statistics(model, shard["sentences"], shard["kind"], progress=progress)
        return {name: value.tolist() if isinstance(value, np.ndarray) else value for name, value in statistics.items()}

    def merge(model, inputs: dict, options: dict, parts: list) -> HeadMap:
        return head_map(model, options["kind"], add_statistics(parts))


@corpus_job("search-heads", read=HeadSearch.from_json)
class SearchHeads:
    """Inputs: sentences, and trees (a treebank's, whose sentences they are) or None. Options: kind, query, key (the
    patterns)."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs, options)

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        return sentence_shards(inputs, options, parts)

    def run(model, shard: dict, progress: Progress = None) -> dict:
        return search_statistics(model, shard["sentences"], shard["query"], shard["key"], shard["kind"],
                                 shard["first"], progress, shard["trees"])

    def merge(model, inputs: dict, options: dict, parts: list) -> HeadSearch:
        return search_result(model, options["kind"], options["query"], options["key"], inputs["sentences"],
                             merged_statistics(parts))
