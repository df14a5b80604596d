"""Pooling a long input's token × token matrices down to the cells a figure can show.

Small multiples (every head of every layer, every head of several models) give each matrix a few hundred pixels:
a 250-token head there would be a cell per pixel or less, and 144 such heads tens of megabytes. So each matrix is
cut into blocks of `factor` tokens a side and each block drawn as one cell, with a note on the figure saying so
(and, in a plotly figure, hover naming each block's tokens). The downloads keep every token's number.
"""

from __future__ import annotations

import math

import numpy as np

from explorer.figures.common import MAX_CELLS, display_tokens


def pool_factor(count: int, cells: int) -> int:
    """Tokens a block takes so that `count` tokens fit in at most `cells` cells (1: no pooling)."""
    return max(1, math.ceil(count / max(cells, 1)))


def _starts(count: int, factor: int) -> np.ndarray:
    return np.arange(0, count, factor)


def _sizes(count: int, factor: int) -> np.ndarray:
    """Tokens in each block (the last may be shorter)."""
    return np.diff(np.append(_starts(count, factor), count))


def block_sums(values: np.ndarray, row_factor: int, column_factor: int) -> np.ndarray:
    """Sums over blocks of the last two axes: [..., rows, columns] → [..., ⌈rows/rf⌉, ⌈columns/cf⌉]."""
    rows, columns = values.shape[-2:]
    summed = np.add.reduceat(values, _starts(columns, column_factor), axis=-1)
    return np.add.reduceat(summed, _starts(rows, row_factor), axis=-2)


def pooled_attention(pattern: np.ndarray, row_factor: int, column_factor: int) -> np.ndarray:
    """Attention [..., queries, keys] pooled: each cell is the total weight a block of queries gives a block of
    keys, averaged over those queries. A pooled row still sums to 1, so a sharp head stays as dark as at full
    resolution (a plain mean over the block would fade it by the block's width) and colours compare on 0–1."""
    queries = pattern.shape[-2]
    sums = block_sums(pattern.astype(np.float64), row_factor, column_factor)
    return (sums / _sizes(queries, row_factor)[:, None]).astype(np.float32)


def pooled_mean(values: np.ndarray, row_factor: int, column_factor: int) -> np.ndarray:
    """Any matrix (scores, masks, encodings) pooled by the mean of each block's finite values; a block with
    none (all −∞: masked) is NaN, which plotly leaves blank like a single −∞ cell."""
    finite = np.isfinite(values)
    total = block_sums(np.where(finite, values, 0.0).astype(np.float64), row_factor, column_factor)
    count = block_sums(finite.astype(np.float64), row_factor, column_factor)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan).astype(np.float32)


def block_labels(tokens: list[str], factor: int) -> list[str]:
    """Axis labels of the blocks: "40–44 ▁a…" (its positions and first token, escaped: short enough to label
    an axis, unique), plain "i token" labels when nothing is pooled."""
    shown = display_tokens(tokens)
    if factor == 1:
        return [f"{i} {token}" for i, token in enumerate(shown)]
    labels = []
    for start in range(0, len(shown), factor):
        end = min(start + factor, len(shown)) - 1
        labels.append(f"{start} {shown[start]}" if end == start else f"{start}–{end} {shown[start]}…")
    return labels


def resolution_note(row_factor: int, column_factor: int, units: tuple[str, str] | None = None,
                    hover: bool = True) -> str:
    """What a pooled figure shows, for its title. units: what its rows and columns are, when not tokens
    ("positions", "dimensions"); hover: whether the figure's hover names a block's tokens (an image's does not)."""
    if units:
        block = f"{row_factor} {units[0]} × {column_factor} {units[1]}"
        return f"shown at 1/{max(row_factor, column_factor)} resolution: each cell is a block of {block}"
    if row_factor == column_factor:
        block = f"{row_factor} × {row_factor} tokens"
        scale = f"1/{row_factor} resolution"
    else:
        block = f"{row_factor} {'query' if row_factor == 1 else 'queries'} × {column_factor} keys"
        scale = f"1/{max(row_factor, column_factor)} resolution"
    return f"shown at {scale}: each cell is a block of {block}" + ("; hover for its tokens" if hover else "")


def budget_factor(rows: int, columns: int, panels: int = 1, budget: int | None = None) -> int:
    """The smallest block (tokens a side) that keeps `panels` matrices of rows × columns within the figure's
    cells budget (common.MAX_CELLS): 1 up to a 512-token head."""
    budget = budget or MAX_CELLS
    factor = 1
    while panels * math.ceil(rows / factor) * math.ceil(columns / factor) > budget:
        factor += 1
    return factor
