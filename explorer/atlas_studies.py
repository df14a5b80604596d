"""The head atlas as notebook calls, with the command line's arguments: the map of a stack's heads (Clark et al. 2019
§6), one head's queries and keys in one space (AttentionViz), and the search for heads by behaviour. The commands
`atlas` and `search-heads` call these same functions and print what they return (.to_json() is their --json).

A corpus is a file's path (one sentence a line, plain or .gz) or a list of strings; the default is the project's
captions (Multi30k's validation English).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from explorer.capture.inputs import InputError
from explorer.studies import Corpus, Progress, corpus_lines

if TYPE_CHECKING:
    from explorer.analyses.corpus.atlas import HeadMap
    from explorer.analyses.corpus.head_search import HeadSearch
    from explorer.analyses.corpus.query_key_space import QueryKeySpace
    from explorer.analyses.jobs.jobs import Ran
    from explorer.models.interface import ExplorerModel

DEFAULT_LIMIT = 200             # sentences of the default corpus read


def atlas_sentences(text: Corpus | None, limit: int | None) -> list[str]:
    import explorer.settings as settings

    sentences, name = corpus_lines(settings.CAPTIONS if text is None else text, "sentences")
    sentences = sentences[: limit or (DEFAULT_LIMIT if text is None else None)]
    if not any(sentence.strip() for sentence in sentences):
        raise InputError(f"{name}: no sentences")
    return sentences


def atlas_job(model: ExplorerModel, text: Corpus | None = None, limit: int | None = None, kind: str | None = None,
              workers: int = 1, ray_address: str | None = None, progress: Progress = None) -> Ran:
    from explorer.analyses.corpus.atlas import stack_kind
    from explorer.analyses.jobs.jobs import run_job

    kind = stack_kind(model, kind)
    return run_job("atlas", model, {"sentences": atlas_sentences(text, limit)}, {"kind": kind}, workers, ray_address,
                   progress, cache_folder=None)


def atlas(model: ExplorerModel, text: Corpus | None = None, limit: int | None = None, kind: str | None = None,
          workers: int = 1, ray_address: str | None = None, progress: Progress = None) -> HeadMap:
    """Every head of one stack (kind: encoder, decoder or cross; default the model's first) on one map: the
    Jensen–Shannon distance between every two heads over the corpus and their MDS layout. A HeadMap: .heads (name,
    layer, head, x, y, sink_share), .distance, .matrix(), .table(), .to_json()."""
    return atlas_job(model, text, limit, kind, workers, ray_address, progress).result


def search_heads(model: ExplorerModel, text: Corpus | None = None, query: str = "any", key: str = "previous",
                 limit: int | None = None, kind: str | None = None, workers: int = 1, ray_address: str | None = None,
                 progress: Progress = None, conllu: str | Path | None = None) -> HeadSearch:
    """Every head of a stack ranked by the share of attention from queries matching `query` (any, word:X; with a
    treebank pos:X, deprel:X) to keys matching `key` (previous, next, self, same, first, special, word:X, any; with a
    treebank head, dependent, pos:X, deprel:X), with a 95% interval, chance and the best examples. conllu: a
    CoNLL-U file read by words instead of the text. A HeadSearch: .heads, .examples, .table(), .to_json()."""
    return search_job(model, text, query, key, limit, kind, workers, ray_address, progress, conllu).result


def search_job(model: ExplorerModel, text: Corpus | None = None, query: str = "any", key: str = "previous",
               limit: int | None = None, kind: str | None = None, workers: int = 1, ray_address: str | None = None,
               progress: Progress = None, conllu: str | Path | None = None) -> Ran:
    from explorer.analyses.corpus.atlas import stack_kind
    from explorer.analyses.corpus.head_search import check_patterns, check_reads_text
    from explorer.analyses.jobs.jobs import run_job
    from explorer.capture.treebank import read_trees

    kind = stack_kind(model, kind)
    check_patterns(query, key, kind, conllu is not None)
    if conllu is not None:
        if text is not None:
            raise InputError("search-heads reads sentences (--text) or a treebank (--conllu), not both")
        check_reads_text(model, kind)
        trees = read_trees(conllu, limit or DEFAULT_LIMIT)
        inputs = {"sentences": [tree.text for tree in trees], "trees": trees}
    else:
        inputs = {"sentences": atlas_sentences(text, limit), "trees": None}
    return run_job("search-heads", model, inputs, {"kind": kind, "query": query, "key": key}, workers, ray_address,
                   progress, cache_folder=None)


def query_key_space(model: ExplorerModel, layer: int, head: int, text: Corpus | None = None, limit: int | None = None,
                    kind: str | None = None, projection: str = "pca") -> QueryKeySpace:
    """One head's queries and keys in one plane (keys moved and scaled as AttentionViz does; pca or tsne)."""
    from explorer.analyses.corpus.query_key_space import query_key_space as space

    return space(model, atlas_sentences(text, limit), layer, head, kind, projection)
