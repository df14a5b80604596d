"""Norm-based attention (Kobayashi, Kuribayashi, Yokoi & Inui 2020, "Attention is Not Only a Weight: Analyzing
Transformers with Vector Norms"): what head h adds to query i from key j is α_ij · f_h(x_j), with
f_h(x_j) = v_j W_O^h — the key's value vector through the head's own slice of the output projection (bias
excluded, as the paper defines it). Its length ‖α_ij · f_h(x_j)‖ = α_ij · ‖v_j W_O^h‖ says how much the key
actually moves the query's representation: a weight on a key whose transformed value is short moves it little.

A trace carries the norms beside the weights (explorer/capture/value_norms.py computes them as it captures); here is
what is read from them: a row's shares, the share on special tokens and punctuation by weight and by norm.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from explorer.capture.trace import Trace
from explorer.capture.words import punctuation
from explorer.models.interface import ExplorerModel


def norm_shares(trace: Trace) -> Trace:
    """A copy of a trace whose patterns are its norms ‖α·f(x)‖ with each query's row scaled to sum 1: what a view
    that draws a row's shares of 1 (bertviz's lines) can show of norm-based attention."""
    attention = {}
    for kind, values in trace.attention.items():
        norm = values.value("norm")
        totals = norm.sum(axis=-1, keepdims=True)
        shares = np.divide(norm, totals, out=np.zeros_like(norm), where=totals > 0)
        attention[kind] = replace(values, pattern=shares.astype(np.float32, copy=False))
    return replace(trace, attention=attention)


def share_on(matrix: np.ndarray, keys: list[int]) -> float:
    """The share of a [..., queries, keys] matrix's total that lands on the given key positions, each query's row
    normalised to sum 1 first (so weights and norms compare on one footing)."""
    totals = matrix.sum(axis=-1, keepdims=True)
    rows = np.divide(matrix, totals, out=np.zeros_like(matrix, dtype=np.float64), where=totals > 0)
    return float(rows[..., keys].sum(axis=-1).mean()) if keys else 0.0


def frequent_keys(model: ExplorerModel, trace: Trace, kind: str) -> list[int]:
    """Key positions of a trace holding a special token (start, end, [CLS], [SEP] …) or punctuation: where
    Kobayashi et al. found weights high and norms low."""
    ids = trace.key_ids(kind)
    pieces = trace.key_tokens(kind)
    return [position for position, (token_id, piece) in enumerate(zip(ids, pieces))
            if token_id in model.special_ids or punctuation(piece)]


def weight_and_norm_shares(model: ExplorerModel, trace: Trace, kind: str) -> tuple[float, float, list[int]]:
    """(share by weight, share by norm, the positions) of one kind's attention, over all its layers, heads and
    queries, that lands on special tokens and punctuation: the paper's headline, on this sentence."""
    keys = frequent_keys(model, trace, kind)
    values = trace.attention[kind]
    return share_on(values.pattern, keys), share_on(values.value("norm"), keys), keys
