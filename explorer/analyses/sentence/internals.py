"""The arithmetic inside one attention head, with the model's real numbers: the padding mask of a batch,
the masked scores softmax sees, and one query's walk through Q, K, V and W_O."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from explorer.capture.head_sets import head_mask, parse_heads
from explorer.capture.inputs import prepare_source
from explorer.capture.trace import Trace
from explorer.models.interface import ExplorerModel


def batch_padding_mask(model: ExplorerModel, sentences: list[str]) -> tuple[np.ndarray, list[list[str]]]:
    """The padding mask of a batch of sentences as the model gets it: [sentences, longest] (True = real token),
    and each row's pieces (padding included). A single sentence has no padding; batched with a longer one, it is
    padded and the mask hides the pads."""
    batch = model.pad([prepare_source(s, model).ids for s in sentences])
    return batch.present.cpu().numpy(), [model.pieces(row) for row in batch.ids.tolist()]


def batch_partner(model: ExplorerModel, text: str, candidates: list[str]) -> str | None:
    """A sentence to batch text with so that one of the two gets padded: the longest candidate when it is longer
    than text (text is padded), else the shortest when it is shorter (it is padded to text). None when every
    candidate has text's length."""
    def count(sentence: str) -> int:
        return len(model.encode(sentence).ids)

    length = count(text)
    longest, shortest = max(candidates, key=count), min(candidates, key=count)
    if count(longest) > length:
        return longest
    return shortest if count(shortest) < length else None


def default_query(tokens: list[str]) -> int:
    """The query a walkthrough opens on: the middle-most token with a letter or digit in it, not a bare word-start
    mark or punctuation (and never the decoder's first position, whose softmax over one key is trivially 1); a
    piece that starts a word where the tokenizer marks them (▁, or no ## for WordPiece), not the "m" inside one."""
    def special(token: str) -> bool:            # <unk>, </s>, [UNK], [SEP]: no word to follow
        return token[:1] in "<[" and token[-1:] in ">]"
    words = [i for i, token in enumerate(tokens) if i > 0 and any(c.isalnum() for c in token) and not special(token)]
    if any(token.startswith("▁") for token in tokens):
        words = [i for i in words if tokens[i].startswith("▁")] or words
    else:
        words = [i for i in words if not tokens[i].startswith("##")] or words
    middle = len(tokens) // 2
    return min(words, key=lambda i: abs(i - middle)) if words else middle


def masked_scores(trace: Trace, kind: str, layer: int, head: int) -> np.ndarray:
    """The scaled scores with −inf wherever the mask forbids attention: what softmax actually sees."""
    scores = trace.attention[kind].value("scores")[layer, head]
    return np.where(trace.masks[kind], scores, -np.inf)


@dataclass
class Walkthrough:
    """One query through one head, with the model's real numbers, then all heads through W_O."""

    q: np.ndarray             # [d_k]
    keys: np.ndarray          # [keys, d_k]
    values: np.ndarray        # [keys, d_k]
    dots: np.ndarray          # q·k for every key
    scaled: np.ndarray        # × scaling (+ the relative position bias, for T5)
    scaling: float            # the model's factor on q·k: 1/√d_k for most models, 1 for T5
    masked: np.ndarray        # −inf where the mask forbids
    weights: np.ndarray       # softmax
    weighted_values: np.ndarray   # weights[:, None] * values
    z: np.ndarray             # sum of the weighted values: this head's output [d_k]
    concatenated: np.ndarray  # every head's z for this query, [heads * d_k]
    output: np.ndarray        # concatenated · W_Oᵀ + b: the block's output [d_model]
    biased: bool = False      # a relative position bias was added to the scaled scores (T5)


def qkv_walkthrough(model: ExplorerModel, trace: Trace, kind: str, layer: int, head: int, query: int) -> Walkthrough:
    values = trace.attention[kind]
    q, keys, vals = values.value("q")[layer, head, query], values.value("k")[layer, head], values.value("v")[layer, head]
    dots = keys @ q
    scaling = model.attention_scaling(kind, layer)
    scaled = dots * scaling
    bias = model.position_bias(kind, trace.masks[kind].shape[0], len(keys))
    if bias is not None:            # T5: a learned bias by relative offset, added to every score
        scaled = scaled + bias[head, query].cpu().numpy()
    masked = np.where(trace.masks[kind][query], scaled, -np.inf)
    weights = np.exp(masked - masked.max())
    weights /= weights.sum()
    weighted = weights[:, None] * vals
    concatenated = values.value("z")[layer, :, query].reshape(-1)
    w_o, b_o = (value.float().cpu().numpy() for value in model.attention_output_weights(kind, layer))  # W_O [out, in]
    if trace.pruned:  # pruned heads' z is gated to zero before W_O, as in the model
        gates = head_mask(parse_heads(trace.pruned, model), model)
        if kind in gates:
            concatenated = (values.value("z")[layer, :, query] * gates[kind][layer].cpu().numpy()[:, None]).reshape(-1)
    return Walkthrough(q, keys, vals, dots, scaled, scaling, masked, weights, weighted, weighted.sum(0), concatenated,
                       concatenated @ w_o.T + b_o, bias is not None)


def walkthrough_table(walk: Walkthrough, keys: list[str]) -> pd.DataFrame:
    """One row per key: its softmax weight, k, v and weight × v (columns k0…, v0…, w·v0…)."""
    d_k = walk.keys.shape[1]
    table = pd.DataFrame(np.concatenate([walk.keys, walk.values, walk.weighted_values], axis=1),
                         index=[f"{i}:{t}" for i, t in enumerate(keys)],
                         columns=[f"k{d}" for d in range(d_k)] + [f"v{d}" for d in range(d_k)]
                         + [f"w·v{d}" for d in range(d_k)])
    table.insert(0, "weight", walk.weights)
    return table
