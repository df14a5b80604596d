"""The positional encodings as the Internals page shows them: sin/cos halves and position similarity."""

from __future__ import annotations

import numpy as np


def position_similarity(positional: np.ndarray) -> np.ndarray:
    """Dot products between the positional encodings of every pair of positions: [P, P]."""
    return positional @ positional.T


def sin_cos_halves(positional: np.ndarray) -> np.ndarray:
    """PE's columns reordered as [sin dims (even) | cos dims (odd)], so the two halves are visible."""
    return np.concatenate([positional[:, 0::2], positional[:, 1::2]], axis=1)
