"""The arithmetic inside one attention head, with the model's real numbers: the padding mask of a batch,
the masked scores softmax sees, and one query's walk through Q, K, V and W_O."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from models.checkpoint import Checkpoint
from models.data import pad_batch
from explorer.head_sets import head_mask, parse_heads
from explorer.inputs import prepare_source
from explorer.open_model import is_hugging_face
from explorer.trace import Trace


def batch_padding_mask(checkpoint: Checkpoint, sentences: list[str]) -> tuple[np.ndarray, list[list[str]]] | None:
    """The model's own padding mask for a batch of sentences: [sentences, longest] (True = real token); None for
    a model that has no padding token (GPT-2 reads one text at a time).

    A single sentence has no padding; batched with a longer one, it is padded and the mask hides the pads.
    """
    tokenizer, max_len = checkpoint.tokenizer, checkpoint.model.config.max_len
    if is_hugging_face(checkpoint):
        from explorer.hugging_face_trace import piece_labels

        if tokenizer.pad_token is None:
            return None
        encoded = tokenizer(sentences, padding=True, truncation=True, max_length=max_len)
        return (np.array(encoded.attention_mask, dtype=bool),
                [piece_labels(tokenizer)(row) for row in encoded.input_ids])
    batch = pad_batch([prepare_source(s, tokenizer, max_len).ids for s in sentences])
    mask = checkpoint.model.padding_mask(batch)[:, 0, 0].numpy()
    return mask, [tokenizer.pieces(row) for row in batch.tolist()]


def longer_sentence(checkpoint: Checkpoint, text: str, candidates: list[str]) -> str | None:
    """The longest candidate, if it has more pieces than text: batched with it, text gets padded."""
    count = (lambda s: len(checkpoint.tokenizer(s).input_ids)) if is_hugging_face(checkpoint) else (
        lambda s: len(checkpoint.tokenizer.encode_ids(s)))
    longest = max(candidates, key=count)
    return longest if count(longest) > count(text) else None


def masked_scores(trace: Trace, kind: str, layer: int, head: int) -> np.ndarray:
    """The scaled scores with −inf wherever the mask forbids attention: what softmax actually sees."""
    scores = trace.attention[kind]["scores"][layer, head]
    return np.where(trace.masks[kind], scores, -np.inf)


@dataclass
class Walkthrough:
    """One query through one head, with the model's real numbers, then all heads through W_O."""

    q: np.ndarray             # [d_k]
    keys: np.ndarray          # [keys, d_k]
    values: np.ndarray        # [keys, d_k]
    dots: np.ndarray          # q·k for every key
    scaled: np.ndarray        # × scaling
    scaling: float            # the model's factor on q·k: 1/√d_k for most models
    masked: np.ndarray        # −inf where the mask forbids
    weights: np.ndarray       # softmax
    weighted_values: np.ndarray   # weights[:, None] * values
    z: np.ndarray             # sum of the weighted values: this head's output [d_k]
    concatenated: np.ndarray  # every head's z for this query, [heads * d_k]
    output: np.ndarray        # concatenated · W_Oᵀ + b: the block's output [d_model]


def qkv_walkthrough(trace: Trace, checkpoint: Checkpoint, kind: str, layer: int, head: int, query: int) -> Walkthrough:
    values = trace.attention[kind]
    q, keys, vals = values["q"][layer, head, query], values["k"][layer, head], values["v"][layer, head]
    model = checkpoint.model
    dots = keys @ q
    scaling = model.attention_scaling(kind, layer)
    scaled = dots * scaling
    masked = np.where(trace.masks[kind][query], scaled, -np.inf)
    weights = np.exp(masked - masked.max())
    weights /= weights.sum()
    weighted = weights[:, None] * vals
    concatenated = values["z"][layer, :, query].reshape(-1)
    w_o, b_o = (value.float().numpy() for value in model.attention_output_weights(kind, layer))  # W_O [out, in]
    if trace.pruned:  # pruned heads' z is gated to zero before W_O, as in the model
        gates = head_mask(parse_heads(trace.pruned, model.config), model.config)
        if kind in gates:
            concatenated = (values["z"][layer, :, query] * gates[kind][layer].numpy()[:, None]).reshape(-1)
    return Walkthrough(q, keys, vals, dots, scaled, scaling, masked, weights, weighted, weighted.sum(0), concatenated,
                       concatenated @ w_o.T + b_o)


def walkthrough_table(walk: Walkthrough, keys: list[str]) -> pd.DataFrame:
    """One row per key: its softmax weight, k, v and weight × v (columns k0…, v0…, w·v0…)."""
    d_k = walk.keys.shape[1]
    table = pd.DataFrame(np.concatenate([walk.keys, walk.values, walk.weighted_values], axis=1),
                         index=[f"{i}:{t}" for i, t in enumerate(keys)],
                         columns=[f"k{d}" for d in range(d_k)] + [f"v{d}" for d in range(d_k)]
                         + [f"w·v{d}" for d in range(d_k)])
    table.insert(0, "weight", walk.weights)
    return table
