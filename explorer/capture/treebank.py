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

from explorer.models.data import CorpusError, decode_text, file_bytes
from explorer.models.word_alignment import sentence_text


@dataclass
class Tree:
    words: list[str]
    heads: list[int]        # index of each word's head word, -1 for the root
    relations: list[str]    # universal relation ("nmod:poss" → "nmod" unless the subtypes were asked for)
    space_after: list[bool] | None = None   # False where CoNLL-U says SpaceAfter=No; None: a space after each
    tags: list[str] | None = None           # each word's universal part of speech (UPOS: NOUN, VERB …)

    @property
    def text(self) -> str:
        """The sentence as written: "did" + "n't" with no space between them is "didn't"."""
        return sentence_text(self.words, self.space_after)[0]


def read_trees(path: str | Path, limit: int | None = None, subtypes: bool = False) -> list[Tree]:
    """Sentences of a CoNLL-U file (plain or .gz): its words, with the spaces between them as written; multi-word
    tokens give only their spacing, and empty nodes are skipped. subtypes: keep
    relations as written (aux:pass), which Clark et al.'s Table 1 needs."""
    return trees_of(file_bytes(path), str(path), limit, subtypes)


def trees_of(data: bytes, path: str, limit: int | None = None, subtypes: bool = False) -> list[Tree]:
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
                                  [str(t["deprel"]) if subtypes else str(t["deprel"]).split(":")[0] for t in tokens],
                                  spaces_after(sentence), [str(t["upos"]) for t in tokens]))
            except (TypeError, ValueError):
                raise CorpusError(f"{path}: a sentence has a token without a numeric head") from None
            if limit and len(trees) >= limit:
                break
    except conllu.exceptions.ParseException as error:
        raise CorpusError(f"{path}: not a readable CoNLL-U file ({error.__class__.__name__})") from None
    if not trees:
        raise CorpusError(f"{path}: no sentences with dependency trees")
    return trees


def _space_after(token) -> bool:
    return (token["misc"] or {}).get("SpaceAfter") != "No"


def spaces_after(sentence) -> list[bool]:
    """Whether a space follows each word as written. A multi-word token ("didn't" = did + n't, id 5-6) carries the
    SpaceAfter of the whole; its words are written together when they spell it, else apart."""
    spaces, joined = {}, {}
    for token in sentence:
        if isinstance(token["id"], tuple) and token["id"][1] == "-":
            first, _, last = token["id"]
            words = [t["form"] for t in sentence if isinstance(t["id"], int) and first <= t["id"] <= last]
            together = "".join(words) == token["form"]
            for word in range(first, last):
                joined[word] = not together
            joined[last] = _space_after(token)
    for token in sentence:
        if isinstance(token["id"], int):
            spaces[token["id"]] = joined.get(token["id"], _space_after(token))
    return [spaces[token["id"]] for token in sentence if isinstance(token["id"], int)]


def word_maps(word_pieces: list[list[int]], piece_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(from [words, pieces]: mean over a word's pieces; to [pieces, words]: sum over a word's pieces)."""
    source = np.zeros((len(word_pieces), piece_count))
    target = np.zeros((piece_count, len(word_pieces)))
    for word, pieces in enumerate(word_pieces):
        source[word, pieces] = 1.0 / len(pieces)
        target[pieces, word] = 1.0
    return source, target


def word_attention(pattern: np.ndarray, word_pieces: list[list[int]], keep_special: bool = True) -> np.ndarray:
    """Piece-level attention [..., pieces, pieces] → word-level [..., units, units] (Clark et al. 2019): the words
    first, in order, then (keep_special) each piece outside every word ([CLS], [SEP], </s>) as a unit of its own.
    Voita et al. take the argmax over every token, so a head whose largest weight is on </s> points at no word;
    without </s> the argmax would credit it with its runner-up. Clark et al.'s code leaves [CLS] and [SEP] out of
    its argmax (attn[1:-1, 1:-1]): keep_special=False."""
    in_words = {piece for pieces in word_pieces for piece in pieces}
    units = word_pieces + ([[piece] for piece in range(pattern.shape[-1]) if piece not in in_words]
                           if keep_special else [])
    source, target = word_maps(units, pattern.shape[-1])
    return source @ pattern @ target
