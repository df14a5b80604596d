"""Greedy and beam-search decoding with incremental (key/value-cached) decoder steps.

Both return the model's output distribution at every step, so a view can show why each token was chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch

from .data import pad_batch
from .tokenizer import BOS, EOS, PAD
from .transformer import Transformer


def steps_source_mask(src_mask: torch.Tensor) -> torch.Tensor | None:
    """The source mask decoding steps need: None when no source position is padding, so that each step's
    cross-attention skips building and applying a mask that hides nothing (as an unpadded batch of one is)."""
    return None if bool(src_mask.all()) else src_mask


# Translations are rarely much longer than their source: in Multi30k's 29,000 training pairs the German side has
# 1.06× the English pieces on average (99.9th percentile 2.1×), and only 2 pairs are longer than
# 1.5 × source + 10 tokens (source and target counted with </s>). Past that, output is a runaway repetition.
LENGTH_RATIO, LENGTH_SLACK = 1.5, 10
# What our models never output: an untrained one would otherwise continue with BOS (its decoder's first input).
NEVER_OUTPUT = torch.tensor([BOS, PAD])


def step_limit(model: Transformer, source_length: int) -> int:
    """How many tokens to generate at most for a source of source_length ids (its </s> included)."""
    return min(model.config.max_len - 1, int(source_length * LENGTH_RATIO) + LENGTH_SLACK)


@dataclass
class GreedyResult:
    tokens: list[list[int]]                 # per sentence, without BOS and EOS


@torch.inference_mode()
def greedy(model: Transformer, src: torch.Tensor, max_steps: int | None = None) -> GreedyResult:
    """Translate a padded batch src [B, S], always picking the most probable next token.

    Each sentence stops at EOS or at its own step limit (from its own length, not the batch's padded
    length), so a sentence's translation never depends on what else is in the batch. It never continues with BOS
    or padding.
    """
    src = src.to(next(model.parameters()).device)
    memory, src_mask = model.encode(src)
    src_mask = steps_source_mask(src_mask)
    batch = src.shape[0]
    source_lengths = (src != PAD).sum(1).tolist()
    limits = [max_steps or step_limit(model, n) for n in source_lengths]
    cache = model.new_cache()
    last = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)
    # Per sentence: output tokens so far; steps taken (the EOS step included) once it has finished.
    tokens: list[list[int]] = [[] for _ in range(batch)]
    steps_taken: list[int | None] = [None] * batch
    for step in range(max(limits)):
        logits = model.decode(last, memory, src_mask, cache, start=step)[:, -1]
        # argmax of the logits is argmax of the log-probabilities: no softmax needed. Never BOS or padding, as in
        # beam search (a beam of one is greedy).
        next_token = logits.index_fill(-1, NEVER_OUTPUT.to(logits.device), float("-inf")).argmax(-1)
        # The bookkeeping runs on Python ints: one tensor→list conversion per step instead of ~10 tiny
        # tensor ops, which cost more than the arithmetic itself for a single sentence.
        for i, token in enumerate(next_token.tolist()):
            if steps_taken[i] is not None:
                continue
            if token == EOS or step + 1 >= limits[i]:
                steps_taken[i] = step + 1
            if token != EOS:
                tokens[i].append(token)
        if all(n is not None for n in steps_taken):
            break
        last = next_token[:, None]  # a finished sentence's row runs on; its outputs are ignored
    return GreedyResult(tokens)


@dataclass
class Hypothesis:
    tokens: list[int]       # without BOS/EOS
    log_prob: float         # sum of token log-probabilities, EOS included when it ended
    score: float            # log_prob / length penalty: what the search ranks by
    ended: bool = True      # it chose EOS (False: cut at the step limit)


@dataclass
class BeamStep:
    """The live beams after one step: their last token, the beam they extend, cumulative log-prob."""

    tokens: list[int]
    parents: list[int]
    log_probs: list[float]


@dataclass
class BeamResult:
    best: Hypothesis
    finished: list[Hypothesis]                      # best first
    steps: list[BeamStep] = field(default_factory=list)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's ((5 + length) / 6) ** alpha (Wu et al. 2016); alpha 0 ranks by raw log-probability."""
    return ((5 + length) / 6) ** alpha


# step(last tokens [alive], histories [alive][tokens so far]) → log-probabilities [alive, vocab] of the next token
NextLogProbs = Callable[[torch.Tensor, list[list[int]]], torch.Tensor]
# reorder(parents [alive]): the live beams now extend these beams of the step before (keep caches in step)
Reorder = Callable[[torch.Tensor], None]


def excluded_tokens(start: int | None, end: int | None, exclude: Iterable[int | None] = ()) -> list[int]:
    """The ids a hypothesis never continues with: the start token (a decoder's first input is never its output)
    and `exclude` (padding, [CLS], language tags…); never the end token, which finishes one (BART and GPT-2
    start from their end token: for them it stays a candidate)."""
    return sorted(({start} | set(exclude)) - {end, None})


def search_beams(next_log_probs: NextLogProbs, reorder: Reorder, start: int, end: int, beam_size: int, alpha: float,
                 max_steps: int, exclude: Iterable[int | None] = ()) -> BeamResult:
    """Beam search over any model that gives next-token log-probabilities for a batch of beams. start: the token
    every beam begins from; end: the token that finishes a hypothesis. Ranked by GNMT's length penalty.

    No hypothesis continues with the start token or the ids in `exclude` (excluded_tokens): their candidates are
    dropped, the others keep the model's own log-probabilities (not renormalised), so scores stay the model's."""
    banned = excluded_tokens(start, end, exclude)
    # Every beam starts as `start`; only the first is live so the first expansion is not counted k times.
    scores = torch.full((beam_size,), float("-inf"))
    scores[0] = 0.0
    histories: list[list[int]] = [[] for _ in range(beam_size)]
    last = torch.full((beam_size, 1), start, dtype=torch.long)
    finished: list[Hypothesis] = []
    steps: list[BeamStep] = []

    for step in range(max_steps):
        log_probs = next_log_probs(last, histories).float()
        vocab = log_probs.shape[-1]
        if banned:
            never = torch.tensor([i for i in banned if 0 <= i < vocab], dtype=torch.long, device=log_probs.device)
            log_probs = log_probs.index_fill(-1, never, float("-inf"))
        candidates = (scores[:, None] + log_probs).view(-1)
        top_scores, top_index = candidates.topk(min(2 * beam_size, candidates.numel()))
        new_beams: list[tuple[int, int, float]] = []  # (parent, token, cumulative log-prob)
        for total, index in zip(top_scores.tolist(), top_index.tolist()):
            if total == float("-inf"):
                break
            parent, token = divmod(index, vocab)
            if token == end or step == max_steps - 1:
                tokens = histories[parent] + ([] if token == end else [token])
                # The length its log-probability sums over: the end token counts when chosen (a cut one has none)
                length = len(tokens) + (token == end)
                finished.append(Hypothesis(tokens, total, total / length_penalty(length, alpha), token == end))
            else:
                new_beams.append((parent, token, total))
            if len(new_beams) == beam_size:
                break
        if len(finished) >= beam_size or not new_beams:
            break
        parents = torch.tensor([p for p, _, _ in new_beams])
        steps.append(BeamStep([t for _, t, _ in new_beams], parents.tolist(), [s for _, _, s in new_beams]))
        histories = [histories[p] + [t] for p, t, _ in new_beams]
        scores = torch.tensor([s for _, _, s in new_beams])
        last = torch.tensor([[t] for _, t, _ in new_beams])
        reorder(parents)

    finished.sort(key=lambda hypothesis: hypothesis.score, reverse=True)
    return BeamResult(finished[0], finished, steps)


@torch.inference_mode()
def beam_search(model: Transformer, src: torch.Tensor, beam_size: int = 5, alpha: float = 0.6,
                max_steps: int | None = None) -> BeamResult:
    """Beam search for one sentence src [1, S]; the beams run as one batch through the decoder, each step
    reusing the keys and values of the steps before. No hypothesis continues with BOS or padding."""
    if src.shape[0] != 1:
        raise ValueError("beam_search translates one sentence at a time")
    memory, src_mask = model.encode(src)
    cache = model.new_cache()
    state = {"memory": memory.expand(beam_size, -1, -1), "step": 0}
    src_mask = steps_source_mask(src_mask)

    def next_log_probs(last: torch.Tensor, histories: list[list[int]]) -> torch.Tensor:
        logits = model.decode(last, state["memory"], src_mask, cache, start=state["step"])[:, -1]
        state["step"] += 1
        return torch.log_softmax(logits.float(), -1)

    def reorder(parents: torch.Tensor) -> None:
        alive = len(parents)
        state["memory"] = state["memory"][:alive]
        for layer_cache in cache:
            layer_cache["self"]["k"] = layer_cache["self"]["k"][parents]
            layer_cache["self"]["v"] = layer_cache["self"]["v"][parents]
            layer_cache["cross"]["k"] = layer_cache["cross"]["k"][:alive]
            layer_cache["cross"]["v"] = layer_cache["cross"]["v"][:alive]

    return search_beams(next_log_probs, reorder, BOS, EOS, beam_size, alpha,
                        max_steps or step_limit(model, src.shape[1]), exclude=NEVER_OUTPUT.tolist())


def translate_ids(model: Transformer, sources: list[list[int]], beam_size: int = 1,
                  batch_size: int = 64, alpha: float = 0.6) -> list[list[int]]:
    """Token ids of many sentences → output ids; greedy in length-sorted batches, or beam one by one."""
    outputs: list[list[int]] = [[] for _ in sources]
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    if beam_size <= 1:
        for start in range(0, len(order), batch_size):
            chunk = order[start: start + batch_size]
            result = greedy(model, pad_batch([sources[i] for i in chunk]))
            for i, tokens in zip(chunk, result.tokens):
                outputs[i] = tokens
    else:
        for i in order:
            outputs[i] = beam_search(model, torch.tensor([sources[i]]), beam_size, alpha).best.tokens
    return outputs
