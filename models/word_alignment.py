"""A sentence given as words (a treebank's) as the model reads it: the text those words make, with the spaces the
treebank records (CoNLL-U's SpaceAfter=No), tokenized once; each word's pieces are the pieces whose characters
overlap it. Voita et al. 2019 and Clark et al. 2019 read attention on the tokenized sentence, so a word is pooled
from the pieces the model really saw ("didn't" is one text, not "did" and "n't" tokenized apart)."""

from __future__ import annotations

Span = tuple[int, int]


def sentence_text(words: list[str], space_after: list[bool] | None = None) -> tuple[str, list[Span]]:
    """The sentence's text and each word's character span in it; without space_after, words are joined by spaces."""
    spaces = space_after if space_after is not None else [True] * len(words)
    text, spans = "", []
    for word, space in zip(words, spaces):
        spans.append((len(text), len(text) + len(word)))
        text += word + (" " if space else "")
    return text.rstrip(" "), spans


def pieces_of_words(word_spans: list[Span], piece_spans: list[Span | None]) -> list[list[int]] | None:
    """Positions of each word's pieces. piece_spans: each position's character span, None for a special token.
    A piece belongs to every word it overlaps (a piece across a word boundary counts for both words); a piece of
    whitespace alone (SentencePiece's lone ▁) belongs to the word after it. None when a word gets no piece (the
    sentence was cut, or the spans do not fit the text)."""
    words: list[list[int]] = [[] for _ in word_spans]
    for position, span in enumerate(piece_spans):
        if span is None:
            continue
        start, end = span
        owners = [w for w, (first, last) in enumerate(word_spans) if start < last and first < end]
        if not owners:
            following = next((w for w, (first, _) in enumerate(word_spans) if first >= end), None)
            owners = [] if following is None else [following]
        for word in owners:
            words[word].append(position)
    return words if all(words) else None


def spans_from_surfaces(surfaces: list[str | None]) -> list[Span | None]:
    """Character spans of pieces whose surfaces (their exact text, None for a special token) follow each other."""
    spans: list[Span | None] = []
    cursor = 0
    for surface in surfaces:
        if surface is None:
            spans.append(None)
            continue
        spans.append((cursor, cursor + len(surface)))
        cursor += len(surface)
    return spans


WORD_START_MARKS = ("▁", "Ġ")


def spans_by_matching(text: str, labels: list[str | None]) -> list[Span | None] | None:
    """Character spans found by reading each piece's label (word-start mark ▁/Ġ or continuation ## taken off) in
    order in the text, skipping whitespace: for a tokenizer that gives no offsets. None when a label is not found
    where the text says it should be (an unknown token, a normalised character)."""
    spans: list[Span | None] = []
    cursor = 0
    for label in labels:
        if label is None:
            spans.append(None)
            continue
        piece = label.lstrip("".join(WORD_START_MARKS)).removeprefix("##")
        start = cursor
        while cursor < len(text) and text[cursor].isspace():
            cursor += 1
        if not piece:                                        # a lone word-start mark: the whitespace itself
            spans.append((start, cursor))
            continue
        if text[cursor: cursor + len(piece)] != piece:
            return None
        cursor += len(piece)
        spans.append((start, cursor))
    return spans
