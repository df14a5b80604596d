"""Dependency trees from CoNLL-U, and the word ↔ subword-piece mapping for word-level attention.

Following Clark et al. 2019 ("What Does BERT Look At?"): attention *to* a word is the sum over its pieces,
attention *from* a word the mean over its pieces. Which pieces belong to which word, the model says
(ExplorerModel.align_words).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import conllu
import numpy as np

from models.data import CorpusError, decode_text, file_bytes


@dataclass
class Tree:
    words: list[str]
    heads: list[int]        # index of each word's head word, -1 for the root
    relations: list[str]    # universal relation without subtype: "nmod:poss" → "nmod"

    @property
    def text(self) -> str:
        return " ".join(self.words)


def read_trees(path: str | Path, limit: int | None = None) -> list[Tree]:
    """Sentences of a CoNLL-U file (plain or .gz); multi-word tokens and empty nodes are skipped."""
    return trees_of(file_bytes(path), str(path), limit)


def trees_of(data: bytes, path: str, limit: int | None = None) -> list[Tree]:
    """The trees in a CoNLL-U file's bytes (plain or gzip); errors name `path`, the person's own file. Read sentence
    by sentence up to `limit`: a 30-sentence run no longer parses a 2,000-sentence treebank."""
    trees = []
    try:
        for sentence in conllu.parse_incr(io.StringIO(decode_text(data, path, "CoNLL-U file"))):
            tokens = [t for t in sentence if isinstance(t["id"], int)]
            if not tokens:
                continue
            try:
                trees.append(Tree([t["form"] for t in tokens], [int(t["head"]) - 1 for t in tokens],
                                  [str(t["deprel"]).split(":")[0] for t in tokens]))
            except (TypeError, ValueError):
                raise CorpusError(f"{path}: a sentence has a token without a numeric head") from None
            if limit and len(trees) >= limit:
                break
    except conllu.exceptions.ParseException as error:
        raise CorpusError(f"{path}: not a readable CoNLL-U file ({error.__class__.__name__})") from None
    if not trees:
        raise CorpusError(f"{path}: no sentences with dependency trees")
    return trees


def word_maps(word_pieces: list[list[int]], piece_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(from [words, pieces]: mean over a word's pieces; to [pieces, words]: sum over a word's pieces)."""
    source = np.zeros((len(word_pieces), piece_count))
    target = np.zeros((piece_count, len(word_pieces)))
    for word, pieces in enumerate(word_pieces):
        source[word, pieces] = 1.0 / len(pieces)
        target[pieces, word] = 1.0
    return source, target


def word_attention(pattern: np.ndarray, word_pieces: list[list[int]]) -> np.ndarray:
    """Piece-level attention [..., pieces, pieces] → word-level [..., words, words] (Clark et al. 2019).

    Pieces outside every word (EOS) drop out: attention to them is not attention to a word.
    """
    source, target = word_maps(word_pieces, pattern.shape[-1])
    return source @ pattern @ target
