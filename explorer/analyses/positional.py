"""The positional information as the Internals page shows it: sin/cos halves, how similar positions are to each
other, and a relative position bias by offset (T5)."""

from __future__ import annotations

import numpy as np


def position_similarity(positional: np.ndarray, cosine: bool = False) -> np.ndarray:
    """Dot products (or cosine similarities) between the encodings of every pair of positions: [P, P]."""
    if cosine:
        positional = positional / np.maximum(np.linalg.norm(positional, axis=1, keepdims=True), 1e-12)
    return positional @ positional.T


def sin_cos_halves(positional: np.ndarray, style: str = "sinusoidal") -> np.ndarray:
    """PE's columns as [sin dims | cos dims], so the two halves are visible (Marian's and M2M100's already are)."""
    if style == "sinusoidal-halves":
        return positional
    return np.concatenate([positional[:, 0::2], positional[:, 1::2]], axis=1)


def bias_by_offset(bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A relative position bias [heads, queries, keys] as (offsets key − query, [heads, offsets]): each offset's
    value read where it occurs (every query with that offset has the same bias)."""
    heads, queries, keys = bias.shape
    offsets = np.arange(-(queries - 1), keys)
    values = np.empty((heads, len(offsets)))
    for column, offset in enumerate(offsets):
        query = max(0, -offset)
        values[:, column] = bias[:, query, query + offset]
    return offsets, values
