"""Norm-based attention (Kobayashi, Kuribayashi, Yokoi & Inui 2020, "Attention is Not Only a Weight: Analyzing
Transformers with Vector Norms"): what head h adds to query i from key j is α_ij · f_h(x_j), with
f_h(x_j) = v_j W_O^h — the key's value vector through the head's own slice of the output projection (bias
excluded, as the paper defines it). Its length ‖α_ij · f_h(x_j)‖ = α_ij · ‖v_j W_O^h‖ says how much the key
actually moves the query's representation: a weight on a key whose transformed value is short moves it little.

Written once on the model interface (the captured v and `attention_output_weights`), so it holds for every family.
"""

from __future__ import annotations

import string

import numpy as np

from models.interface import ExplorerModel


def transformed_value_norms(model: ExplorerModel, kind: str, values: np.ndarray) -> np.ndarray:
    """‖v_j W_O^h‖ for every layer, head and key: values [layers, heads, keys, d_k] → [layers, heads, keys]."""
    layers, heads, _, d_k = values.shape
    norms = np.empty(values.shape[:3], dtype=np.float32)
    for layer in range(layers):
        w_o = model.attention_output_weights(kind, layer)[0].float().numpy()      # [d_model, heads × d_k]
        for head in range(heads):
            block = w_o[:, head * d_k:(head + 1) * d_k]                          # the head's slice [d_model, d_k]
            norms[layer, head] = np.linalg.norm(values[layer, head] @ block.T, axis=-1)
    return norms


def norm_attention(model: ExplorerModel, kind: str, pattern: np.ndarray, values: np.ndarray,
                   gates: np.ndarray | None = None) -> np.ndarray:
    """‖α_ij f_h(x_j)‖ [layers, heads, queries, keys]. gates [layers, heads]: a pruned head (gate 0) adds
    nothing, so its norms are 0, as its output is in the model."""
    norms = pattern * transformed_value_norms(model, kind, values)[:, :, None, :]
    if gates is not None:
        norms *= gates[:, :, None, None]
    return norms.astype(np.float32, copy=False)       # no second copy: at 500 tokens × 144 heads it is 137 MB


def norm_shares(trace):
    """A copy of a trace whose patterns are its norms ‖α·f(x)‖ with each query's row scaled to sum 1: what a view
    that draws a row's shares of 1 (bertviz's lines) can show of norm-based attention. (trace: an
    explorer.capture.trace.Trace, not imported: that module imports this one.)"""
    from dataclasses import replace

    attention = {}
    for kind, values in trace.attention.items():
        totals = values["norm"].sum(axis=-1, keepdims=True)
        shares = np.divide(values["norm"], totals, out=np.zeros_like(values["norm"]), where=totals > 0)
        attention[kind] = dict(values, pattern=shares.astype(np.float32, copy=False))
    return replace(trace, attention=attention)


def share_on(matrix: np.ndarray, keys: list[int]) -> float:
    """The share of a [..., queries, keys] matrix's total that lands on the given key positions, each query's row
    normalised to sum 1 first (so weights and norms compare on one footing)."""
    totals = matrix.sum(axis=-1, keepdims=True)
    rows = np.divide(matrix, totals, out=np.zeros_like(matrix, dtype=np.float64), where=totals > 0)
    return float(rows[..., keys].sum(axis=-1).mean()) if keys else 0.0


def frequent_keys(trace, model: ExplorerModel, kind: str) -> list[int]:
    """Key positions of a trace holding a special token (start, end, [CLS], [SEP] …) or punctuation: where
    Kobayashi et al. found weights high and norms low. (trace: an explorer.capture.trace.Trace, not imported: that
    module imports this one.)"""
    ids = trace.target_ids if kind == "decoder" else (trace.source_ids or trace.target_ids)
    pieces = trace.key_tokens(kind)
    return [position for position, (token_id, piece) in enumerate(zip(ids, pieces))
            if token_id in model.special_ids or punctuation(piece)]


def punctuation(piece: str) -> bool:
    """A piece of punctuation only ("▁.", ",", "##-"), its word-boundary marks aside."""
    text = piece.strip("▁Ġ ").removeprefix("##")
    return bool(text) and all(character in string.punctuation for character in text)


def weight_and_norm_shares(trace, model: ExplorerModel, kind: str) -> tuple[float, float, list[int]]:
    """(share by weight, share by norm, the positions) of one kind's attention, over all its layers, heads and
    queries, that lands on special tokens and punctuation: the paper's headline, on this sentence."""
    keys = frequent_keys(trace, model, kind)
    values = trace.attention[kind]
    return share_on(values["pattern"], keys), share_on(values["norm"], keys), keys
