"""One head's queries and keys in one space, as AttentionViz (Yeh et al., IEEE VIS 2023) draws them.

The query and key vectors of a corpus's tokens are put in one plane so that a query sits near the keys it attends to.
Attention depends on q · k only through the softmax of one query's scores, so two changes leave every pattern as it
is: translating all keys by one vector (it adds the same number to each score of a query), and scaling queries by c
and keys by 1/c. AttentionViz uses both: queries and keys are scaled to the same mean length, then the keys are
moved so that their mean is the queries' mean; then the dot product's ranking is close to a distance's. The 2-D view is PCA
(scikit-learn) or t-SNE (scikit-learn's TSNE, seeded; UMAP is not among the explorer's libraries).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.analyses.corpus.atlas import read_sentences, stack_kind
from explorer.analyses.records import Record
from explorer.capture.inputs import InputError
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import Kind

PROJECTIONS = ("pca", "tsne")
MOST_SENTENCES = 100        # the corpus's first sentences read (captions: ~3,000 queries and keys together)


@dataclass
class SpacePoint(Record):
    side: str           # "query" or "key"
    token: str
    sentence: int       # its sentence's place in the corpus
    position: int
    x: float
    y: float
    top_key: str        # a query's most attended key ("" for a key)


@dataclass
class QueryKeySpace(Record):
    model: str
    head: str           # enc.1.6
    projection: str
    sentences: int
    points: list[SpacePoint]
    NESTED = {"points": SpacePoint}


def aligned(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttentionViz's two changes that keep every pattern: queries × c and keys ÷ c, c making their mean lengths
    equal; then the keys moved so that their mean is the queries' (the two clouds share a centre)."""
    scale = np.sqrt(np.linalg.norm(keys, axis=1).mean() / max(np.linalg.norm(queries, axis=1).mean(), 1e-12))
    queries, keys = queries * scale, keys / scale
    return queries, keys - keys.mean(0) + queries.mean(0)


def projected(points: np.ndarray, projection: str, seed: int = 0) -> np.ndarray:
    if projection == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=2, random_state=seed).fit_transform(points)
    from sklearn.manifold import TSNE

    return TSNE(n_components=2, perplexity=min(30.0, len(points) / 4), random_state=seed,
                init="pca").fit_transform(points)


def query_key_space(model: ExplorerModel, sentences: list[str], layer: int, head: int, kind: str | None = None,
                    projection: str = "pca") -> QueryKeySpace:
    """The head's queries and keys over the first MOST_SENTENCES sentences, aligned and projected to 2-D."""
    kind = stack_kind(model, kind)
    if projection not in PROJECTIONS:
        raise InputError(f"unknown projection {projection!r}; use one of {', '.join(PROJECTIONS)}")
    if not (0 <= layer < model.layers(kind) and 0 <= head < model.heads):
        raise InputError(f"{model.name} has no head {Kind(kind).short}.{layer}.{head}: {model.layers(kind)} {kind} layers "
                         f"of {model.heads} heads, counted from 0")
    queries, keys, labels, read_count = [], [], [], 0
    for read in read_sentences(model, list(sentences)[:MOST_SENTENCES], kind, values=("pattern", "q", "k")):
        pattern = read.values["pattern"][layer, head]
        queries.append(read.values["q"][layer, head])
        keys.append(read.values["k"][layer, head])
        labels += [("query", token, read.index, i, read.keys[int(np.argmax(pattern[i]))])
                   for i, token in enumerate(read.queries)]
        labels += [("key", token, read.index, i, "") for i, token in enumerate(read.keys)]
        read_count += 1
    if not queries:
        raise InputError("no sentence to read: the corpus is empty")
    q, k = aligned(np.concatenate(queries), np.concatenate(keys))
    # labels run query block, key block per sentence; the vectors as all queries then all keys: put them in that order
    order = [label for label in labels if label[0] == "query"] + [label for label in labels if label[0] == "key"]
    xy = projected(np.concatenate([q, k]), projection)
    points = [SpacePoint(side, token, sentence, position, round(float(x), 4), round(float(y), 4), top)
              for (side, token, sentence, position, top), (x, y) in zip(order, xy)]
    return QueryKeySpace(model.name, f"{Kind(kind).short}.{layer}.{head}", projection, read_count, points)
