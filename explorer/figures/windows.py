"""A window of a long input's tokens, for views that cannot show them all: bertviz's head and model views draw a
line for every pair of tokens in every head (at 250 tokens 62,500 lines a head, a 27 MB page nobody can read), so
for a long input they get a window of tokens on each long side: WINDOW, fewer for a model with many heads."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from explorer.capture.trace import HeadValues, Trace
from explorer.figures.common import is_long

WINDOW = 40     # tokens: bertviz's columns of labels stay readable in its frame
VALUES = 100_000    # weights a windowed view carries at most (12 × 12 heads of 40 tokens: 230,000, a 4 MB page)


def window_size(trace: Trace) -> int:
    """WINDOW tokens, fewer for a model with many heads (26 for 12 layers × 12 heads), 16 at least."""
    matrices = sum(trace.pattern(kind).shape[0] * trace.pattern(kind).shape[1] for kind in trace.attention)
    return int(np.clip(np.sqrt(VALUES / max(matrices, 1)), 16, WINDOW))


def focus_range(count: int, start: int, size: int) -> range:
    """Positions start … start + size − 1, moved left to fit in `count` tokens; all of them when `size` holds
    them all."""
    if count <= size:
        return range(count)
    start = max(0, min(start, count - size))
    return range(start, start + size)


def window_range(count: int, start: int, size: int = WINDOW) -> range:
    """focus_range for bertviz: a window only on a long side (is_long), all of its tokens otherwise."""
    return focus_range(count, start, size) if is_long(count) else range(count)


def window_text(tokens: list[str], shown: range, most: int = 44) -> str:
    """The words of a window, to say which part of the sentence a figure shows: the pieces joined (a word-start
    mark, SentencePiece's ▁ or byte-level BPE's Ġ, becomes a space; WordPiece's ## joins its word), its middle
    left out past `most` characters (“in a red shirt … from the side”)."""
    pieces = tokens[shown.start:shown.stop]
    if any(piece.startswith(("▁", "Ġ")) for piece in pieces):
        text = "".join(pieces).replace("▁", " ").replace("Ġ", " ")
    else:
        text = " ".join(pieces).replace(" ##", "")
    text = " ".join(text.split())
    if len(text) <= most:
        return text
    half = (most - 3) // 2
    left, right = text[:half], text[-half:]
    if " " in left.strip():              # whole words either side of the gap
        left = left.rsplit(" ", 1)[0]
    if " " in right.strip():
        right = right.split(" ", 1)[1]
    return f"{left.rstrip()} … {right.lstrip()}"


def window_trace(trace: Trace, start: int, size: int = WINDOW) -> Trace:
    """The trace cut to the window from `start` on every long side (source, target), patterns only: what
    bertviz's views read. A short side is kept whole (a 250-token caption's 36-token translation)."""
    source = window_range(len(trace.source_tokens), start, size)
    target = window_range(len(trace.target_tokens), start, size)
    sides = {"encoder": (source, source), "decoder": (target, target), "cross": (target, source)}
    attention = {kind: HeadValues(trace.pattern(kind)[:, :, rows.start:rows.stop, columns.start:columns.stop])
                 for kind, (rows, columns) in ((k, sides[k]) for k in trace.attention)}
    return replace(trace, attention=attention,
                   source_tokens=trace.source_tokens[source.start:source.stop],
                   target_tokens=trace.target_tokens[target.start:target.stop])


def window_words(trace: Trace, start: int, size: int = WINDOW) -> str:
    """What a windowed view shows, in words: "source tokens 40–79 of 250"."""
    parts = []
    for side, tokens in (("source", trace.source_tokens), ("target", trace.target_tokens)):
        if tokens and is_long(len(tokens)):
            shown = window_range(len(tokens), start, size)
            parts.append(f"{side} tokens {shown.start}–{shown.stop - 1} of {len(tokens)}")
    return " and ".join(parts)
