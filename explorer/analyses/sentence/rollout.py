"""Attention combined over heads and layers: the head average and attention rollout."""

from __future__ import annotations

import numpy as np


def head_average(pattern: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
    """[layers, heads, query, key] → [layers, query, key]. live: [layers, heads], 0 for a pruned head: the average
    of the heads still at work (a pruned head's output is multiplied by 0; a layer with none left mixes nothing)."""
    if live is None:
        return pattern.mean(axis=1)
    weights = np.asarray(live, dtype=float)[:, :, None, None]
    return (pattern * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


def attention_rollout(pattern: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
    """Abnar & Zuidema 2020: how much each input token flows into each position after layer l.

    Per layer, average the heads and add the identity for the residual connection (0.5 A + 0.5 I, rows
    renormalised), then multiply the layers up: rollout_l = Â_l · … · Â_0. Returns [layers, query, key].
    live: [layers, heads], 0 for a pruned head, left out of the average.
    """
    layers, _, length, _ = pattern.shape
    averaged = head_average(pattern, live)
    flow = np.eye(length)
    rollout = []
    for layer in range(layers):
        mixed = 0.5 * averaged[layer] + 0.5 * np.eye(length)
        mixed /= mixed.sum(axis=-1, keepdims=True)
        flow = mixed @ flow
        rollout.append(flow)
    return np.stack(rollout)
