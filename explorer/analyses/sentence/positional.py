"""The positional information as the Internals page shows it: sin/cos halves, how similar positions are to each
other, a relative position bias by offset (T5), and the angles rotary positions turn q and k by (Llama)."""

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


def rotary_angles(frequencies: tuple[float, ...], positions: int) -> np.ndarray:
    """[positions, pairs]: the angle (radians, unwrapped) by which rotary positions turn pair i of every head's q
    and k at position p, p·θ_i, from the model's own θ_i (Architecture.rotary_frequencies). q·k of a query at m
    and a key at n then sees only the difference (m − n)·θ_i of their angles."""
    return np.arange(positions, dtype=np.float64)[:, None] * np.asarray(frequencies, dtype=np.float64)[None, :]


def grid_closeness(similarity: np.ndarray, grid: tuple[int, int]) -> dict[str, float]:
    """How much a learned position table knows the 2-D layout of its patches: Spearman's ρ between two patches'
    similarity and their closeness on the grid (minus the city-block distance), and the mean similarity of
    neighbours (one step apart) against patches four or more steps apart. similarity: [patches, patches]."""
    from scipy.stats import spearmanr

    rows, columns = grid
    places = np.array([(row, column) for row in range(rows) for column in range(columns)])
    distance = np.abs(places[:, None] - places[None]).sum(-1)
    others = ~np.eye(len(places), dtype=bool)
    far = distance >= 4
    return {"rho": float(spearmanr(similarity[others], -distance[others]).statistic),
            "neighbours": float(similarity[distance == 1].mean()),
            "far": float(similarity[far].mean()) if far.any() else float("nan")}

