"""Numbers derived from a trace or a model run: rollout, averages, the Q/K/V arithmetic, teacher forcing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from models.checkpoint import Checkpoint
from models.data import pad_batch
from models.decoding import LENGTH_RATIO, LENGTH_SLACK, BeamResult, beam_search, step_limit
from models.tokenizer import BOS, EOS
from models.vocabulary import attention_block
from explorer.heads import head_mask, parse_heads
from explorer.inputs import prepare_source
from explorer.trace import Trace


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


def position_similarity(positional: np.ndarray) -> np.ndarray:
    """Dot products between the positional encodings of every pair of positions: [P, P]."""
    return positional @ positional.T


def sin_cos_halves(positional: np.ndarray) -> np.ndarray:
    """PE's columns reordered as [sin dims (even) | cos dims (odd)], so the two halves are visible."""
    return np.concatenate([positional[:, 0::2], positional[:, 1::2]], axis=1)


def batch_padding_mask(checkpoint: Checkpoint, sentences: list[str]) -> tuple[np.ndarray, list[list[str]]]:
    """The model's own padding mask for a batch of sentences: [sentences, longest] (True = real token).

    A single sentence has no padding; batched with a longer one, it is padded and the mask hides the pads.
    """
    tokenizer, max_len = checkpoint.tokenizer, checkpoint.model.config.max_len
    batch = pad_batch([prepare_source(s, tokenizer, max_len).ids for s in sentences])
    mask = checkpoint.model.padding_mask(batch)[:, 0, 0].numpy()
    return mask, [tokenizer.pieces(row) for row in batch.tolist()]


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
    scaled: np.ndarray        # ÷ √d_k
    masked: np.ndarray        # −inf where the mask forbids
    weights: np.ndarray       # softmax
    weighted_values: np.ndarray   # weights[:, None] * values
    z: np.ndarray             # sum of the weighted values: this head's output [d_k]
    concatenated: np.ndarray  # every head's z for this query, [heads * d_k]
    output: np.ndarray        # concatenated · W_Oᵀ + b: the block's output [d_model]


def qkv_walkthrough(trace: Trace, checkpoint: Checkpoint, kind: str, layer: int, head: int, query: int) -> Walkthrough:
    values = trace.attention[kind]
    q, keys, vals = values["q"][layer, head, query], values["k"][layer, head], values["v"][layer, head]
    dots = keys @ q
    scaled = dots / np.sqrt(q.shape[0])
    masked = np.where(trace.masks[kind][query], scaled, -np.inf)
    weights = np.exp(masked - masked.max())
    weights /= weights.sum()
    weighted = weights[:, None] * vals
    concatenated = values["z"][layer, :, query].reshape(-1)
    block = checkpoint.model.get_submodule(attention_block(kind, layer))
    w_o, b_o = block.w_o.weight.detach().numpy(), block.w_o.bias.detach().numpy()  # W_O stored [out, in]
    if trace.pruned:  # pruned heads' z is gated to zero before W_O, as in the model
        gates = head_mask(parse_heads(trace.pruned, checkpoint.model.config), checkpoint.model.config)
        if kind in gates:
            concatenated = (values["z"][layer, :, query] * gates[kind][layer].numpy()[:, None]).reshape(-1)
    return Walkthrough(q, keys, vals, dots, scaled, masked, weights, weighted, weighted.sum(0), concatenated,
                       concatenated @ w_o.T + b_o)


@dataclass
class TeacherForcing:
    tokens: list[str]          # reference pieces + </s>
    probabilities: list[float]  # the model's probability of each reference token given the ones before
    ranks: list[int]           # 1 = the model's own first choice
    loss: float                # mean negative log-likelihood per token (nats)

    @property
    def perplexity(self) -> float:
        return float(np.exp(self.loss))


@torch.no_grad()
def teacher_forcing(checkpoint: Checkpoint, source: str, reference: str) -> TeacherForcing:
    """Feed the reference translation to the decoder and read off each of its tokens' probability."""
    model, tokenizer = checkpoint.model, checkpoint.tokenizer
    src = torch.tensor([prepare_source(source, tokenizer, model.config.max_len).ids])
    target = prepare_source(reference, tokenizer, model.config.max_len).ids[:-1][: model.config.max_len - 1] + [EOS]
    log_probs = torch.log_softmax(model(src, torch.tensor([[BOS] + target[:-1]]))[0].float(), -1)
    chosen = log_probs[torch.arange(len(target)), target]
    ranks = (log_probs > chosen[:, None]).sum(-1) + 1
    return TeacherForcing(tokenizer.pieces(target), chosen.exp().tolist(), ranks.tolist(), float(-chosen.mean()))


def stopping_reason(trace: Trace, checkpoint: Checkpoint) -> str:
    """Why the decoding of a trace stopped, in words: the model chose </s>, or the length limit was reached."""
    if trace.steps and trace.steps[-1].chosen_id == EOS:
        return f"It stopped because the model chose </s> at step {len(trace.steps) - 1}."
    limit = step_limit(checkpoint.model, len(trace.source_tokens))
    return (f"It stopped at the length limit without choosing </s>: {LENGTH_RATIO} × {len(trace.source_tokens)} "
            f"source tokens + {LENGTH_SLACK} = {limit} steps.")


def beam_tree(checkpoint: Checkpoint, text: str, beam_size: int, alpha: float = 0.6) -> BeamResult:
    src = torch.tensor([prepare_source(text, checkpoint.tokenizer, checkpoint.model.config.max_len).ids])
    return beam_search(checkpoint.model, src, beam_size, alpha)
