"""Norm-based attention (Kobayashi, Kuribayashi, Yokoi & Inui 2020, "Attention is Not Only a Weight: Analyzing
Transformers with Vector Norms"): what head h adds to query i from key j is α_ij · f_h(x_j), with
f_h(x_j) = v_j W_O^h — the key's value vector through the head's own slice of the output projection (bias
excluded, as the paper defines it). Its length ‖α_ij · f_h(x_j)‖ = α_ij · ‖v_j W_O^h‖ says how much the key
actually moves the query's representation: a weight on a key whose transformed value is short moves it little.

It lives in capture/ because a trace records it beside the weights (trace.py); what is read from it — shares on
special tokens, sinks — is in explorer/analyses/sentence/norms.py. Written once on the model interface (the captured v and
`attention_output_weights`), so it holds for every family.
"""

from __future__ import annotations

import numpy as np

from explorer.models.interface import AttentionModel


def transformed_value_norms(model: AttentionModel, kind: str, values: np.ndarray) -> np.ndarray:
    """‖v_j W_O^h‖ for every layer, head and key: values [layers, heads, keys, d_k] → [layers, heads, keys]."""
    layers, heads, _, d_k = values.shape
    norms = np.empty(values.shape[:3], dtype=np.float32)
    for layer in range(layers):
        w_o = model.attention_output_weights(kind, layer)[0].float().cpu().numpy()      # [d_model, heads × d_k]
        for head in range(heads):
            block = w_o[:, head * d_k:(head + 1) * d_k]                          # the head's slice [d_model, d_k]
            norms[layer, head] = np.linalg.norm(values[layer, head] @ block.T, axis=-1)
    return norms


def norm_attention(model: AttentionModel, kind: str, pattern: np.ndarray, values: np.ndarray,
                   gates: np.ndarray | None = None) -> np.ndarray:
    """‖α_ij f_h(x_j)‖ [layers, heads, queries, keys]. gates [layers, heads]: a pruned head (gate 0) adds
    nothing, so its norms are 0, as its output is in the model."""
    norms = pattern * transformed_value_norms(model, kind, values)[:, :, None, :]
    if gates is not None:
        norms *= gates[:, :, None, None]
    return norms.astype(np.float32, copy=False)       # no second copy: at 500 tokens × 144 heads it is 137 MB
