"""Decoding step by step: teacher forcing on a reference, why decoding stopped, the beam search tree, and a masked
language model's fill-in view. Written once on the model interface."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from explorer.capture.forcing import forced_log_probs
from explorer.capture.head_sets import HeadSpec, head_mask
from explorer.capture.inputs import InputError, prepare_source
from explorer.capture.trace import StepDistribution, Trace, step_distributions
from explorer.models import generation
from explorer.models.decoding import BeamResult
from explorer.models.hooks import capture, model_run
from explorer.models.interface import ExplorerModel, Generates
from explorer.models.tokenizer import clean_text
from explorer.models.vocabulary import Kind, attention_hook


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
def teacher_forcing(model: ExplorerModel, source: str, reference: str) -> TeacherForcing:
    """Feed a reference output (a translation, or a continuation of the prompt) to the decoder and read off each
    of its tokens' probability given the ones before."""
    source_ids = prepare_source(source, model).ids          # InputError for a model of images
    assert isinstance(model, Generates)             # only a model that writes has a decoder to force
    if not isinstance(reference, str) or not clean_text(reference):
        raise InputError("Please type a reference (the input is empty).")
    room = model.max_positions - len(model.decoder_input(source_ids, [])[0]) + 1     # positions left for it
    target = model.encode_reference(reference)[: max(1, room)]
    log_probs = forced_log_probs(model, source_ids, target)
    chosen = log_probs[torch.arange(len(target)), target]
    ranks = (log_probs > chosen[:, None]).sum(-1) + 1
    return TeacherForcing(model.pieces(target), chosen.exp().tolist(), ranks.tolist(), float(-chosen.mean()))


def stopping_reason(model: ExplorerModel, trace: Trace) -> str:
    """Why the decoding of a trace stopped, in words: the model chose its end token, or the step limit was reached."""
    assert isinstance(model, Generates)             # only a model that writes decodes
    assert model.end_id is not None                 # and every family's writer has an end token (</s>, eos)
    end = model.pieces([model.end_id])[0]
    if trace.steps and trace.steps[-1].chosen_id == model.end_id:
        return f"It stopped because the model chose {end} at step {len(trace.steps) - 1}."
    source_length = len(trace.source_tokens) or trace.first_step_position + 1
    return f"It stopped at the length limit without choosing {end}: {model.step_limit_rule(source_length)}."


def beam_tree(model: ExplorerModel, text: str, beam_size: int, alpha: float = 0.6,
              pruned: Iterable[HeadSpec] = ()) -> BeamResult:
    """Every live beam at every step of a beam search (GNMT length penalty α) for one sentence; no beam continues
    with a special token other than the end token, whichever family the model is. pruned: heads masked throughout."""
    with model_run(head_mask=head_mask(pruned, model)):
        return generation.beam_search(model, prepare_source(text, model).ids, beam_size, alpha)


@dataclass
class MaskedWord:
    """A masked language model's view of one token hidden behind its mask token: its predictions, and which heads
    carried them."""

    tokens: list[str]           # the input with the token masked
    position: int
    prediction: StepDistribution    # chosen = the hidden token; top-k = what the model fills in
    head_effect: np.ndarray     # [layers, heads] |∂ log p(hidden token) / ∂ gate| (Michel et al. 2019, one example)
    attention: np.ndarray       # [layers, heads, keys]: where the mask position attended


def maskable_positions(model: ExplorerModel, trace: Trace) -> list[int]:
    """The source positions that hold a real token (not [CLS], [SEP], <s>, </s>…)."""
    return [i for i, token_id in enumerate(trace.source_ids) if token_id not in model.special_ids]


def masked_word(model: ExplorerModel, trace: Trace, position: int, top_k: int = 10) -> MaskedWord:
    """Hide the token at `position` of the trace's input behind the mask token and ask the model to fill it in."""
    if model.mask_id is None:
        raise InputError(f"{model.name} has no mask token: the masked-token view is for masked language models.")
    ids = list(trace.source_ids)
    hidden = ids[position]
    ids[position] = model.mask_id
    gates = {Kind.ENCODER: torch.ones(model.layers(Kind.ENCODER), model.heads, requires_grad=True)}
    with torch.enable_grad(), model_run(head_mask=gates), \
            capture(model.hook_names, [attention_hook("encoder", "*", "pattern")]) as cache:
        logits = model.forward(model.pad([ids]))
        assert logits is not None                   # an encoder's forward gives its logits
        log_probs = torch.log_softmax(logits[0, position].float(), -1)
        (gradient,) = torch.autograd.grad(log_probs[hidden], [gates[Kind.ENCODER]])
    prediction = step_distributions(log_probs.detach()[None], [hidden], model.pieces, top_k)[0]
    attention = cache.layers("encoder", "pattern")[0, :, :, position].cpu().numpy()
    return MaskedWord(model.pieces(ids), position, prediction, gradient.abs().cpu().numpy(), attention)


def steps_table(trace: Trace) -> pd.DataFrame:
    """Each decoding step's chosen token, its probability and the distribution's entropy."""
    return pd.DataFrame({"chosen": [s.chosen for s in trace.steps], "p(chosen)": [s.chosen_prob for s in trace.steps],
                         "entropy (nats)": [s.entropy for s in trace.steps]})


def step_attention_row(trace: Trace, layer: int, step: int, head: int | None = None) -> np.ndarray:
    """What decoding step `step` looked at: its weights over the source (cross-attention) for an
    encoder–decoder, over the tokens before it (self-attention) for a decoder-only model; one head's, or the
    average over heads (head None)."""
    kind = trace.step_kind
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
