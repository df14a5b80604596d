"""Sampling an output instead of decoding the most probable one, and what the settings do to one step's
distribution: temperature, top-k and nucleus (top-p, Holtzman et al. 2020) filtering, seeded so that the same
settings give the same output (models/sampling.py holds the arithmetic; the model interface's sample() the loop).

The step view is cheap by construction: a step's log-probabilities (the model's own, T = 1) are computed once per
trace, teacher-forced over its output, and each change of a setting only redoes the softmax over them
(log_softmax(x) differs from the logits x by a constant, so softmax(log p / T) = softmax(x / T)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from explorer.forcing import forced_log_probs
from explorer.head_sets import HeadSpec, head_mask, parse_heads
from explorer.inputs import InputError, prepare_source
from explorer.trace import Trace
from models.hooks import model_run
from models.interface import ExplorerModel
from models.sampling import Sampling, SamplingError, never_sampled, sampling_probabilities

SHOWN = 15          # tokens a step's distribution shows


@dataclass
class Sample:
    text: str               # the sampled output, detokenized
    ids: list[int]          # its ids (no prefix, no end token)
    tokens: list[str]       # its pieces
    settings: Sampling


def sample(model: ExplorerModel, text: str, settings: Sampling, pruned: list[HeadSpec] | None = None,
           fix_casing: bool = True) -> Sample:
    """One sampled output (a translation, or a continuation) of one sentence; the same settings (seed included)
    give the same output. InputError for a model that does not generate."""
    if not model.has("decoder"):
        raise InputError(f"{model.name} fills in masked tokens; it does not generate text to sample")
    source = prepare_source(text, model, fix_casing)
    with torch.no_grad(), model_run(head_mask=head_mask(pruned or [], model)):
        ids = model.sample(source.ids, settings.temperature, settings.top_k, settings.top_p, settings.seed)
    return Sample(model.detokenize(ids), ids, model.pieces(ids), settings)


def settings_from(temperature: float | None, top_k: int | None, top_p: float | None, seed: int | None) -> Sampling:
    """Sampling settings from optional values (None: the default), as InputError when out of range."""
    try:
        return Sampling(1.0 if temperature is None else temperature, top_k or 0, 1.0 if top_p is None else top_p,
                        seed or 0)
    except SamplingError as error:
        raise InputError(str(error)) from None


@torch.no_grad()
def step_log_probs(model: ExplorerModel, trace: Trace) -> np.ndarray:
    """[steps, vocab]: each step's log-probabilities over the vocabulary, teacher-forced over the trace's output
    (its pruned heads pruned): the model's own distributions, which every setting then reshapes."""
    if not trace.steps:
        raise InputError("The trace has no decoding steps.")
    chosen = [step.chosen_id for step in trace.steps]
    with model_run(head_mask=head_mask(parse_heads(trace.pruned, model), model)):
        source_ids = trace.source_ids if model.has("encoder") else trace.target_ids[: trace.first_step_position + 1]
        return forced_log_probs(model, source_ids, chosen).numpy()


@dataclass
class StepSampling:
    """One step's distribution before and after the sampling settings, for its SHOWN most probable tokens."""

    ids: list[int]
    tokens: list[str]
    model_probs: list[float]        # the model's own (T = 1, nothing filtered)
    sampled_probs: list[float]      # what a token is drawn from with these settings
    kept: int                       # tokens left with a probability > 0
    kept_mass: float                # their share of the model's own distribution
    entropy: float                  # of the distribution sampled from, nats
    settings: Sampling


def step_sampling(log_probs: np.ndarray, settings: Sampling, model: ExplorerModel, shown: int = SHOWN) -> StepSampling:
    """A step's distribution reshaped by the settings (banned: every special token but the end token, as sample()
    does); only softmaxes over one row of log-probabilities."""
    row = torch.tensor(np.asarray(log_probs, dtype=np.float32))       # a copy: cached arrays are read-only
    own = row.exp()
    banned = never_sampled(model.start_id, model.end_id, model.special_ids | {model.pad_id})
    drawn = sampling_probabilities(row, settings, banned)
    kept = drawn > 0
    top = own.topk(min(shown, own.shape[-1])).indices.tolist()
    entropy = float(-(drawn[kept] * drawn[kept].log()).sum())
    return StepSampling(top, model.pieces(top), own[top].tolist(), drawn[top].tolist(), int(kept.sum()),
                        float(own[kept].sum()), entropy, settings)


def step_sampling_table(step: StepSampling) -> pd.DataFrame:
    return pd.DataFrame({"token": step.tokens, "model (T = 1)": step.model_probs, "sampled from": step.sampled_probs})
