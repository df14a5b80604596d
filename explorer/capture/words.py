"""Word-level attention (Clark, Khandelwal, Levy & Manning 2019, "What Does BERT Look At?", §2 and appendix):
a tokenizer splits words into pieces, so a heatmap over pieces spreads one word's attention over several cells.
Their rule turns a [query, key] matrix into one over words: attention **to** a word is the sum over its pieces
(a query's row still sums to 1), attention **from** a word is the mean over its pieces' rows.

Words are what the tokenizer marks (models/interface.word_starts: SentencePiece's and byte-level BPE's ▁,
WordPiece's ##), with each piece of punctuation a word of its own, as BERT's own pre-tokenizer splits them (the
data Clark et al. worked on), and every special token a word of its own. An apostrophe inside a word ("didn't",
"O'Neil", "it’s") is no punctuation mark of its own: a reader sees one word, so the apostrophe and the letters after
it stay in the word, while a quotation mark ("'Yes'") stays a word of its own. Norm-based attention
(explorer/capture/value_norms.py) is aggregated the same way: the sum of a word's ‖α·f(x)‖ over its pieces, an upper bound of the
norm of their sum.

`word_trace(model, trace)` returns a Trace over words, so every view draws it unchanged.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, replace

import numpy as np

from explorer.capture.trace import Generated, HeadValues, Trace
from explorer.models.interface import ExplorerModel

AGGREGATED = ("pattern", "norm")    # what a word trace carries; scores, q/k/v/z have no meaning summed over pieces


@dataclass(frozen=True)
class Words:
    spans: list[range]      # each word's piece positions, in order, covering every piece
    labels: list[str]       # "▁playing" from "▁play", "ing"; "playing" from "play", "##ing"

    def __len__(self) -> int:
        return len(self.spans)

    def mean_matrix(self) -> np.ndarray:
        """[words, pieces]: each row averages a word's pieces (attention from a word)."""
        matrix = np.zeros((len(self.spans), self.spans[-1].stop if self.spans else 0), dtype=np.float32)
        for word, span in enumerate(self.spans):
            matrix[word, span.start:span.stop] = 1.0 / len(span)
        return matrix

    def sum_matrix(self) -> np.ndarray:
        """[pieces, words]: each column sums a word's pieces (attention to a word)."""
        return (self.mean_matrix() > 0).T.astype(np.float32)

    def word_of(self, position: int) -> int:
        return next(word for word, span in enumerate(self.spans) if position in span)


def punctuation(piece: str) -> bool:
    """A piece of punctuation only ("▁.", ",", "##-"), its word-boundary marks aside."""
    text = piece.strip("▁Ġ ").removeprefix("##")
    return bool(text) and all(character in string.punctuation for character in text)


def words_of(model: ExplorerModel, ids: list[int]) -> Words:
    """The words of a sequence of piece ids: a word begins where the tokenizer starts one, at each piece of
    punctuation and after it, and at each special token and after it; an apostrophe inside a word joins it."""
    labels = model.pieces(ids)
    starts = model.word_starts(ids)
    inside = word_internal_apostrophes(labels, starts, [token in model.special_ids for token in ids],
                                       marks_spaces(model))
    spans, begin = [], 0
    for position in range(1, len(ids)):
        if position in inside or position - 1 in inside:     # "didn" "'" "t": neither the ' nor the t begins a word
            continue
        bare_space = all(label == "▁" for label in labels[begin:position])    # SentencePiece's "▁" then "("
        if starts[position] or (not bare_space and punctuation(labels[position])) or punctuation(labels[position - 1]):
            spans.append(range(begin, position))
            begin = position
    if ids:
        spans.append(range(begin, len(ids)))
    return Words(spans, [word_label(labels[span.start:span.stop]) for span in spans])


APOSTROPHES = ("'", "’", "ʼ")     # typewriter, typographic (U+2019) and modifier-letter apostrophes
# What follows an apostrophe inside an English word (it's, didn't, I'd, I'm, we're, we've, we'll), and the elided
# words before one (O'Neil, d'Artagnan, l'homme): all a rule can go by where the tokenizer forgets the spaces.
CLITICS = frozenset({"s", "t", "d", "m", "re", "ve", "ll"})
ELIDED = frozenset({"o", "d", "l"})


def marks_spaces(model: ExplorerModel) -> bool:
    """Whether the pieces show where the text had spaces (SentencePiece's and byte-level BPE's ▁). WordPiece's don't:
    BERT's pre-tokenizer splits "didn't" into "didn", "'", "t", three word-initial pieces, as it splits "didn ' t"."""
    return any(label.startswith("▁") for label in model.pieces(model.encode("a a").ids))


def word_internal_apostrophes(labels: list[str], starts: list[bool], special: list[bool],
                              spaces_marked: bool) -> set[int]:
    """Positions of apostrophe pieces that sit inside a word: letters right before and right after, no space on
    either side. Where the pieces mark spaces that settles it ("▁it", "'", "s" is one word, "▁'", "Yes" a quotation
    mark then a word); where they don't (WordPiece), the apostrophe joins when a clitic follows it or an elided word
    precedes it, so a quotation mark after a word ("said 'yes'") stays apart."""
    def text(position: int) -> str:
        return labels[position].strip("▁Ġ ").removeprefix("##")

    inside = set()
    for position in range(1, len(labels) - 1):
        before, after = position - 1, position + 1
        if (text(position) not in APOSTROPHES or labels[position].startswith("▁") or special[before] or special[after]
                or not text(before)[-1:].isalpha() or not text(after)[:1].isalpha()):
            continue
        if spaces_marked:
            joined = not starts[position] and not starts[after]
        else:
            joined = text(after).lower() in CLITICS or (starts[before] and text(before).lower() in ELIDED)
        if joined:
            inside.add(position)
    return inside


def word_label(pieces: list[str]) -> str:
    return pieces[0] + "".join(piece.removeprefix("##") for piece in pieces[1:])


def to_words(matrix: np.ndarray, queries: Words, keys: Words) -> np.ndarray:
    """[..., query pieces, key pieces] → [..., query words, key words]: summed over a key word's pieces, averaged
    over a query word's pieces."""
    aggregated = queries.mean_matrix() @ matrix.astype(np.float32, copy=False) @ keys.sum_matrix()
    return aggregated.astype(np.float32, copy=False)


def words_mask(mask: np.ndarray, queries: Words, keys: Words) -> np.ndarray:
    """A word may attend to a word when any of its pieces may attend to any of the other's."""
    return to_words(mask.astype(np.float32), queries, keys) > 0


def word_trace(model: ExplorerModel, trace: Trace) -> Trace:
    """The trace over words: tokens are words, patterns and norms aggregated (Clark et al. 2019). Its ids are each
    word's first piece (what says a word is a special token); decoding steps stay per piece (the output is chosen a
    piece at a time); per-position vectors (q/k/v/z, embeddings, positions) are left out."""
    source, target = words_of(model, trace.source_ids), words_of(model, trace.target_ids)
    sides = {"encoder": (source, source), "decoder": (target, target), "cross": (target, source)}
    attention = {kind: HeadValues(**{name: to_words(array, *sides[kind]) for name, array in values.arrays().items()
                                     if name in AGGREGATED})
                 for kind, values in trace.attention.items()}
    masks = {kind: words_mask(mask, *sides[kind]) for kind, mask in trace.masks.items()}
    return replace(trace, source_ids=[trace.source_ids[span.start] for span in source.spans],
                   target_ids=[trace.target_ids[span.start] for span in target.spans],
                   source_tokens=source.labels, target_tokens=target.labels, attention=attention, masks=masks,
                   positional={}, embeddings={}, inputs={},
                   output=replace(trace.output, first_step_position=target.word_of(trace.first_step_position)
                                  if target.spans else 0) if isinstance(trace.output, Generated) else trace.output)
