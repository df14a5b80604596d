"""Decoding step by step: teacher forcing on a reference, why decoding stopped, and the beam search tree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import torch

from models.checkpoint import Checkpoint
from models.decoding import LENGTH_RATIO, LENGTH_SLACK, BeamResult, beam_search, step_limit
from models.tokenizer import BOS, EOS
from explorer.inputs import prepare_source
from explorer.open_model import is_hugging_face
from explorer.trace import Trace


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
    if is_hugging_face(checkpoint):
        from explorer import hugging_face_decoding

        return hugging_face_decoding.teacher_forcing(checkpoint, source, reference)
    model, tokenizer = checkpoint.model, checkpoint.tokenizer
    src = torch.tensor([prepare_source(source, tokenizer, model.config.max_len).ids])
    target = prepare_source(reference, tokenizer, model.config.max_len).ids[:-1][: model.config.max_len - 1] + [EOS]
    log_probs = torch.log_softmax(model(src, torch.tensor([[BOS] + target[:-1]]))[0].float(), -1)
    chosen = log_probs[torch.arange(len(target)), target]
    ranks = (log_probs > chosen[:, None]).sum(-1) + 1
    return TeacherForcing(tokenizer.pieces(target), chosen.exp().tolist(), ranks.tolist(), float(-chosen.mean()))


def stopping_reason(trace: Trace, checkpoint: Checkpoint) -> str:
    """Why the decoding of a trace stopped, in words: the model chose </s>, or the length limit was reached."""
    if is_hugging_face(checkpoint):
        from explorer import hugging_face_decoding

        return hugging_face_decoding.stopping_reason(trace, checkpoint)
    if trace.steps and trace.steps[-1].chosen_id == EOS:
        return f"It stopped because the model chose </s> at step {len(trace.steps) - 1}."
    limit = step_limit(checkpoint.model, len(trace.source_tokens))
    return (f"It stopped at the length limit without choosing </s>: {LENGTH_RATIO} × {len(trace.source_tokens)} "
            f"source tokens + {LENGTH_SLACK} = {limit} steps.")


def beam_tree(checkpoint: Checkpoint, text: str, beam_size: int, alpha: float = 0.6) -> BeamResult:
    if is_hugging_face(checkpoint):
        from explorer import hugging_face_decoding

        return hugging_face_decoding.beam_tree(checkpoint, text, beam_size, alpha)
    src = torch.tensor([prepare_source(text, checkpoint.tokenizer, checkpoint.model.config.max_len).ids])
    return beam_search(checkpoint.model, src, beam_size, alpha)


def steps_table(trace: Trace) -> pd.DataFrame:
    """Each decoding step's chosen token, its probability and the distribution's entropy."""
    return pd.DataFrame({"chosen": [s.chosen for s in trace.steps], "p(chosen)": [s.chosen_prob for s in trace.steps],
                         "entropy (nats)": [s.entropy for s in trace.steps]})


def step_attention_row(trace: Trace, layer: int, step: int, head: int | None = None) -> np.ndarray:
    """What decoding step `step` looked at: its weights over the source (cross-attention) for an
    encoder–decoder, over the tokens before it (self-attention) for a decoder-only model; one head's, or the
    average over heads (head None)."""
    kind = "cross" if "cross" in trace.attention else "decoder"
    pattern = trace.pattern(kind)[layer]
    row = trace.first_step_position + step
    return pattern.mean(0)[row] if head is None else pattern[head, row]


def beam_steps_table(result: BeamResult, pieces: Callable[[list[int]], list[str]]) -> pd.DataFrame:
    """Every hypothesis the beam kept at every step: its token, parent (row of the step before) and score."""
    return pd.DataFrame([{"step": i + 1, "rank": rank, "token": token, "parent": parent, "cumulative log-prob": log_prob}
                         for i, step in enumerate(result.steps)
                         for rank, (token, parent, log_prob) in enumerate(zip(pieces(step.tokens), step.parents,
                                                                             step.log_probs))])


def finished_table(result: BeamResult, text: Callable[[list[int]], str]) -> pd.DataFrame:
    """The finished hypotheses, best first: translation, log-probability, length-penalised score, length."""
    return pd.DataFrame({"translation": [text(h.tokens) for h in result.finished],
                         "log-prob": [h.log_prob for h in result.finished], "score": [h.score for h in result.finished],
                         "tokens": [len(h.tokens) for h in result.finished]})


def teacher_forcing_table(forced: TeacherForcing) -> pd.DataFrame:
    return pd.DataFrame({"token": forced.tokens, "probability": forced.probabilities, "rank": forced.ranks})
