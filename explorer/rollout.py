"""Attention combined over heads and layers: the head average and attention rollout."""

from __future__ import annotations

import numpy as np


def head_average(pattern: np.ndarray) -> np.ndarray:
    """[layers, heads, query, key] → [layers, query, key]."""
    return pattern.mean(axis=1)


def attention_rollout(pattern: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema 2020: how much each input token flows into each position after layer l.

    Per layer, average the heads and add the identity for the residual connection (0.5 A + 0.5 I, rows
    renormalised), then multiply the layers up: rollout_l = Â_l · … · Â_0. Returns [layers, query, key].
    """
    layers, _, length, _ = pattern.shape
    flow = np.eye(length)
    rollout = []
    for layer in range(layers):
        mixed = 0.5 * pattern[layer].mean(axis=0) + 0.5 * np.eye(length)
        mixed /= mixed.sum(axis=-1, keepdims=True)
        flow = mixed @ flow
        rollout.append(flow)
    return np.stack(rollout)
