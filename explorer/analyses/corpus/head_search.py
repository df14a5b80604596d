"""Search heads by behaviour (as TransformerLens's head detectors and Neuronpedia's HeadVis search a corpus): rank
every head of a stack by the share of attention its queries matching one pattern give to keys matching another.

Query patterns: `any`, `word:X` (a piece spelling X, case-insensitive, its word-start mark ▁ Ġ ## ignored).
Key patterns, relative to each query: `previous`, `next`, `self`, `same` (the same piece earlier in the sentence:
the query's earlier copy), `first` (the first token), `special` ([CLS], [SEP], </s> …), `word:X`, `any`. The
positional ones (previous, next, self, same) need self-attention, where queries and keys are one sequence.

On a treebank (CoNLL-U) the units are its words, as Clark et al. (2019) read attention between words: a word's row
is the mean of its pieces' rows, a key word's weight the sum over its pieces, and each special token a key of its
own after the words (explorer/capture/treebank.word_attention). There the patterns may also name the grammar:
queries `pos:NOUN` (a universal part of speech) or `deprel:nsubj` (the word's relation to its head); keys `head`
(the query word's syntactic head), `dependent` (a word whose head it is), `pos:X`, `deprel:X`; `first` is the
first word.

A head's score is Σ over sentences of the attention from the matching queries to their matching keys, over the
number of matching queries (each query's row sums to 1, so the score is a share, 0–1), with a sentence-bootstrap
95% interval; `chance` is the share uniform attention over the keys a query may see would give. The examples: for
each of the best heads, the query where it gives the matching keys the most, among the queries whose matching keys
include a word (the first word's previous token is [CLS], which a head that always looks at [CLS] also "finds").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.analyses.corpus.atlas import read_sentences, stack_kind
from explorer.analyses.records import Record
from explorer.capture.inputs import InputError
from explorer.capture.treebank import Tree
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import Kind

QUERY_PATTERNS = ("any", "word:X")
KEY_PATTERNS = ("previous", "next", "self", "same", "first", "special", "word:X", "any")
TREE_QUERY_PATTERNS = ("pos:X", "deprel:X")
TREE_KEY_PATTERNS = ("head", "dependent", "pos:X", "deprel:X")
POSITIONAL = {"previous", "next", "self", "same", "head", "dependent"}
PREFIXES = ("word:", "pos:", "deprel:")
EXAMPLES = 5                # the best heads whose best example is kept
MARKS = ("▁", "Ġ", "##")


def plain(piece: str) -> str:
    for mark in MARKS:
        piece = piece.removeprefix(mark)
    return piece.lower()


def check_patterns(query: str, key: str, kind: str, treebank: bool = False) -> None:
    """One line naming what is wrong with the patterns asked for."""
    for given, plain_patterns, tree_patterns in ((query, QUERY_PATTERNS, TREE_QUERY_PATTERNS),
                                                 (key, KEY_PATTERNS, TREE_KEY_PATTERNS)):
        allowed = plain_patterns + (tree_patterns if treebank else ())
        prefix = next((p for p in PREFIXES if given.startswith(p)), None)
        known = given in allowed or (prefix and f"{prefix}X" in allowed and given[len(prefix):].strip())
        if not known:
            needs = " (with a treebank: --conllu)" if given in TREE_KEY_PATTERNS or (
                prefix and f"{prefix}X" in TREE_QUERY_PATTERNS + TREE_KEY_PATTERNS) else ""
            raise InputError(f"unknown pattern {given!r}{needs}; use one of {', '.join(allowed)}")
    if key in POSITIONAL and not Kind(kind).is_self:
        raise InputError(f"the key pattern {key!r} needs self-attention; {kind} attention reads another sequence")


def matches(pattern: str, pieces: list[str], read) -> np.ndarray:
    """[units] True where a unit (piece, or a treebank's word) matches word:X, pos:X or deprel:X; special units
    never match a word's pattern."""
    prefix, _, wanted = pattern.partition(":")
    wanted = wanted.strip()
    tree = getattr(read, "tree", None)
    words = len(tree.words) if tree else len(pieces)
    if prefix == "word":
        found = [plain(piece) == wanted.lower() for piece in pieces[:words]]
    elif prefix == "pos":
        found = [tag == wanted.upper() for tag in (tree.tags or [])]
    else:
        found = [relation == wanted.lower() for relation in tree.relations]
    return np.array(found + [False] * (len(pieces) - len(found)), dtype=bool)


def query_rows(pattern: str, read) -> np.ndarray:
    if pattern == "any":
        return np.ones(len(read.queries), dtype=bool)
    return matches(pattern, read.queries, read)


def key_cells(pattern: str, read) -> np.ndarray:
    """[queries, keys] True where the key matches the pattern for that query."""
    queries, keys, special = read.queries, read.keys, read.special_keys
    q, k = np.arange(len(queries))[:, None], np.arange(len(keys))[None, :]
    shape = (len(queries), len(keys))
    # a treebank's special tokens come after its words: no word's neighbour (in the pieces they are where they are)
    words = ~special[None, :] if getattr(read, "tree", None) else True
    if pattern == "previous":
        return (k == q - 1) & words
    if pattern == "next":
        return (k == q + 1) & words
    if pattern == "self":
        return k == q
    if pattern == "same":
        plain_q, plain_k = np.array([plain(p) for p in queries]), np.array([plain(p) for p in keys])
        return (k < q) & (plain_q[:, None] == plain_k[None, :]) & ~special[None, :]
    if pattern in ("head", "dependent"):
        heads = np.array(read.tree.heads + [-2] * (len(keys) - len(read.tree.heads)))       # specials: no word's
        return (k == heads[:len(queries), None]) if pattern == "head" else (heads[None, :] == q)
    if pattern == "first":
        return np.broadcast_to(k == 0, shape)
    if pattern == "special":
        return np.broadcast_to(special[None, :], shape)
    if pattern == "any":
        return np.ones(shape, dtype=bool)
    return np.broadcast_to(matches(pattern, keys, read)[None, :], shape)


@dataclass
class TreeRead:
    """One treebank sentence read by words: queries its words, keys its words and then its special tokens."""
    index: int
    queries: list[str]
    keys: list[str]
    values: dict
    special_keys: np.ndarray
    tree: Tree


def read_trees(model: ExplorerModel, trees: list[Tree], kind: str, progress=None):
    """Each tree the model's tokenizer lines up with its words (models/word_alignment.py), as word-level attention."""
    from explorer.capture.treebank import word_attention

    aligned = [model.align_words(tree.words, tree.space_after) for tree in trees]
    for read in read_sentences(model, [tree.text for tree in trees], kind, progress=progress,
                               token_ids=[a.ids if a is not None else None for a in aligned]):
        tree, pieces = trees[read.index], aligned[read.index].word_pieces
        in_words = {piece for word in pieces for piece in word}
        specials = [piece for piece in range(len(read.keys)) if piece not in in_words]
        pattern = word_attention(read.values["pattern"], pieces)[:, :, :len(tree.words)]
        yield TreeRead(read.index, list(tree.words), list(tree.words) + [read.keys[p] for p in specials],
                       {"pattern": pattern}, np.array([False] * len(tree.words) + [True] * len(specials)), tree)


@dataclass
class FoundHead(Record):
    name: str           # enc.1.7; `spec` the same, as every command names a head
    spec: str
    kind: str
    layer: int
    head: int
    share: float        # attention from the matching queries to the matching keys, over those queries
    low: float
    high: float


@dataclass
class Example(Record):
    head: str
    sentence: str
    query: int          # the query's position
    token: str
    share: float
    top_key: str        # the key the head gives that query the most


@dataclass
class HeadSearch(Record):
    """`python -m explorer search-heads --json`: every head ranked, best first."""
    model: str
    kind: str
    query: str
    key: str
    sentences: int
    queries: int        # queries matching the query pattern (with at least one matching key allowed)
    chance: float       # the share uniform attention would give
    heads: list[FoundHead]
    examples: list[Example]
    NESTED = {"heads": FoundHead, "examples": Example}

    def table(self):
        import pandas as pd

        return pd.DataFrame([head.to_json() for head in self.heads]).set_index("name").drop(columns="spec")


def search_statistics(model: ExplorerModel, sentences: list[str], query: str, key: str, kind: str,
                      first: int = 0, progress=None, trees: list[Tree] | None = None) -> dict:
    """Per sentence (in corpus order; `first`: the place of sentences[0] in the whole corpus): each head's attention
    from the matching queries to their matching keys, the matching queries, uniform attention's share; and per head
    its best example (share, sentence, position, token, its top key; None before one is found)."""
    given, best = {}, None
    reads = (read_trees(model, trees, kind, progress) if trees is not None
             else read_sentences(model, sentences, kind, progress=progress))
    for read in reads:
        pattern = read.values["pattern"]                                     # [layers, heads, queries, keys]
        cells = key_cells(key, read)
        allowed = pattern.sum(axis=(0, 1)) > 0                               # keys some head may see (causal mask)
        usable = cells & allowed
        rows = query_rows(query, read) & usable.any(-1)
        share = (pattern * usable).sum(-1)                                    # [layers, heads, queries]
        uniform = (usable.sum(-1) / np.maximum(allowed.sum(-1), 1))[rows].sum()
        given[read.index] = (share[..., rows].sum(-1).reshape(-1).tolist(), int(rows.sum()), float(uniform))
        best = best_examples(best, share.reshape(-1, share.shape[-1]), pattern.reshape(-1, *pattern.shape[2:]),
                             rows & telling(key, usable, read.special_keys), read, first)
    ordered = [given[index] for index in sorted(given)]
    return {"given": [row[0] for row in ordered], "counts": [row[1] for row in ordered],
            "uniform": [row[2] for row in ordered], "best": best or []}


def telling(key: str, usable: np.ndarray, special: np.ndarray) -> np.ndarray:
    """[queries] The queries whose matching keys include a word, unless the pattern asks for the special tokens:
    "the previous token" of the first word is [CLS], where a head that always looks at [CLS] would score as well."""
    if key in ("special", "first", "any"):
        return np.ones(len(usable), dtype=bool)
    return (usable & ~special[None, :]).any(-1)


def best_examples(best: list | None, shares: np.ndarray, patterns: np.ndarray, rows: np.ndarray, read,
                  first: int) -> list:
    """Each head's best example so far: the query (of `rows`) where it gives the matching keys the most."""
    best = best or [None] * len(shares)
    if not rows.any():
        return best
    positions = np.flatnonzero(rows)
    for head, values in enumerate(shares[:, positions]):
        position = int(positions[int(np.argmax(values))])
        value = float(shares[head, position])
        if best[head] is None or value > best[head][0]:
            best[head] = (value, first + read.index, position, read.queries[position],
                          read.keys[int(np.argmax(patterns[head, position]))])
    return best


def merged_statistics(parts: list[dict]) -> dict:
    """Shards' statistics, in corpus order (each shard a consecutive run of sentences); each head's best example
    the best of the shards'."""
    heads = max(len(part["best"]) for part in parts)
    best = [max((part["best"][head] for part in parts if part["best"] and part["best"][head] is not None),
                key=lambda item: item[0], default=None) for head in range(heads)]
    return {"given": [row for part in parts for row in part["given"]],
            "counts": [count for part in parts for count in part["counts"]],
            "uniform": [value for part in parts for value in part["uniform"]],
            "best": [tuple(item) if item is not None else None for item in best]}


def search_result(model: ExplorerModel, kind: str, query: str, key: str, sentences: list[str], statistics: dict
                  ) -> HeadSearch:
    """Every head ranked from the corpus's statistics, with intervals and the best examples."""
    from explorer.analyses.corpus.intervals import ratio_intervals, rounded

    counts = np.array(statistics["counts"], dtype=float)
    if not counts.sum():
        raise InputError(f"no query matches {query!r} with a key matching {key!r} in these {len(sentences)} sentences")
    given = np.array(statistics["given"])
    low, high = ratio_intervals(given, counts)
    shares, heads = given.sum(0) / counts.sum(), model.heads
    name = lambda n: f"{Kind(kind).short}.{n // heads}.{n % heads}"           # noqa: E731
    found = [FoundHead(name(n), name(n), kind, int(n // heads), int(n % heads), rounded(shares[n]), rounded(low[n]),
                       rounded(high[n]))
             for n in np.argsort(-shares, kind="stable")]
    # the best example of each of the EXAMPLES best heads (one that tells: not only a special token to match)
    examples = [Example(name(n), sentences[found_best[1]], found_best[2], found_best[3], round(found_best[0], 4),
                        found_best[4])
                for n in np.argsort(-shares, kind="stable")[:EXAMPLES]
                if (found_best := statistics["best"][n] if statistics["best"] else None) is not None]
    return HeadSearch(model.name, kind, query, key, len(counts), int(counts.sum()),
                      rounded(sum(statistics["uniform"]) / counts.sum()), found, examples)


def search_heads(model: ExplorerModel, sentences: list[str] | None, query: str = "any", key: str = "previous",
                 kind: str | None = None, progress=None, trees: list[Tree] | None = None) -> HeadSearch:
    """Every head of the stack ranked by the share of attention from `query`-matching queries to `key`-matching
    keys (module docstring), with intervals and the best examples, in this process; over a treebank's words when
    trees are given (the sentences are then theirs)."""
    kind = stack_kind(model, kind)
    check_patterns(query, key, kind, trees is not None)
    if trees is not None:
        check_reads_text(model, kind)
    texts = [tree.text for tree in trees] if trees is not None else list(sentences)
    return search_result(model, kind, query, key, texts, search_statistics(model, texts, query, key, kind,
                                                                            progress=progress, trees=trees))


def check_reads_text(model: ExplorerModel, kind: str) -> None:
    """A treebank's words are what the stack that reads the text attends over: not a translator's German side."""
    if Kind(kind).query_side is not Kind(stack_kind(model, None)).query_side or not Kind(kind).is_self:
        raise InputError(f"a treebank's words are read by {model.name}'s {stack_kind(model, None)} self-attention, "
                         f"not by its {kind} attention")
