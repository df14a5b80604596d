"""Sampling an output instead of decoding the most probable one, and what the settings do to one step's
distribution: temperature, top-k and nucleus (top-p, Holtzman et al. 2020) filtering, seeded so that the same
settings give the same output (models/sampling.py holds the arithmetic; the model interface's sample() the loop).

The step view is cheap by construction: a step's log-probabilities (the model's own, T = 1) are computed once per
trace, teacher-forced over its output, and each change of a setting only redoes the softmax over them
(log_softmax(x) differs from the logits x by a constant, so softmax(log p / T) = softmax(x / T)).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from explorer.capture.forcing import forced_log_probs
from explorer.capture.head_sets import HeadSpec, head_mask, parse_heads
from explorer.capture.inputs import InputError, prepare_source
from explorer.capture.trace import Trace
from explorer.models import generation
from explorer.models.hooks import model_run
from explorer.models.interface import ExplorerModel, Generates
from explorer.models.sampling import Sampling, SamplingError, never_sampled, sampling_probabilities

SHOWN = 15          # tokens a step's distribution shows


WORD_START = "▁"      # SentencePiece's word-start mark: a piece of it alone is an empty word


@dataclass
class Sample:
    text: str               # the sampled output, detokenized (an empty word drawn adds no space: sample_text)
    ids: list[int]          # its ids (no prefix, no end token)
    tokens: list[str]       # its pieces
    settings: Sampling
    ended: bool = True      # whether it stopped by drawing the end token (else at the step limit)
    source_ids: list[int] = field(default_factory=list)     # what the model read (source, or prompt)
    end_id: int | None = None
    end_token: str = ""

    @property
    def step_ids(self) -> list[int]:
        """The token drawn at each step: the output's, then the end token when it ended by drawing it."""
        return self.ids + ([self.end_id] if self.ended and self.end_id is not None else [])

    @property
    def step_tokens(self) -> list[str]:
        return self.tokens + ([self.end_token] if self.ended and self.end_id is not None else [])


def sample_text(model: ExplorerModel, ids: list[int], pieces: list[str]) -> str:
    """The sample's text. A sample may draw the word-start mark ▁ alone (an empty word) before a piece that starts
    a word itself: detokenized as is, that is two spaces in a row ("Tieres  win"). Such an empty word is left out
    of the text (its id stays in the sample, and its step in the step view)."""
    kept = [token for token, piece, following in zip(ids, pieces, pieces[1:] + [WORD_START])
            if not (piece == WORD_START and following.startswith(WORD_START))]
    return model.detokenize(kept)


def sample(model: ExplorerModel, text: str, settings: Sampling, pruned: list[HeadSpec] | None = None,
           fix_casing: bool = False) -> Sample:
    """One sampled output (a translation, or a continuation) of one sentence; the same settings (seed included)
    give the same output. InputError for a model that does not generate."""
    if not isinstance(model, Generates):
        raise InputError(f"{model.name} fills in masked tokens; it does not generate text to sample")
    source = prepare_source(text, model, fix_casing)
    with torch.no_grad(), model_run(head_mask=head_mask(pruned or [], model)):
        ids = generation.sample(model, source.ids, settings.temperature, settings.top_k, settings.top_p, settings.seed)
    pieces = model.pieces(ids)
    ended = len(ids) < model.step_limit(len(source.ids))           # sample_sequence stops early only at the end
    return Sample(sample_text(model, ids, pieces), ids, pieces, settings, ended, list(source.ids), model.end_id,
                  model.pieces([model.end_id])[0] if model.end_id is not None else "")


@torch.no_grad()
def sample_log_probs(model: ExplorerModel, drawn: Sample, pruned: list[HeadSpec] | None = None) -> np.ndarray:
    """[steps, vocab]: the model's own log-probabilities (T = 1) at each step of a sample, teacher-forced over the
    tokens it drew (the same heads pruned): the distribution each of its tokens was drawn from, before the
    settings reshaped it."""
    if not drawn.step_ids:
        raise InputError("The sample has no steps.")
    with model_run(head_mask=head_mask(pruned or [], model)):
        return forced_log_probs(model, drawn.source_ids, drawn.step_ids).cpu().numpy()


def vocabulary_size(model: ExplorerModel) -> int:
    """How many tokens the output projection scores (the top-k setting's largest value)."""
    with torch.no_grad():
        return int(model.unembed("decoder", torch.zeros(1, model.d_model)).shape[-1])


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
        return forced_log_probs(model, source_ids, chosen).cpu().numpy()


@dataclass
class StepSampling:
    """One step's distribution before and after the sampling settings, for its SHOWN most probable tokens that can
    be drawn (and the drawn token, when given, even if it is not among them)."""

    ids: list[int]
    tokens: list[str]
    model_probs: list[float]        # the model's own (T = 1, nothing filtered)
    sampled_probs: list[float]      # what a token is drawn from with these settings
    kept: int                       # tokens left with a probability > 0
    kept_mass: float                # their share of the model's own distribution
    entropy: float                  # of the distribution sampled from, nats
    settings: Sampling
    drawn_id: int | None = None     # the token the sample drew at this step
    never_drawn: list[str] = field(default_factory=list)   # special tokens among the most probable: left out


def step_sampling(log_probs: np.ndarray, settings: Sampling, model: ExplorerModel, shown: int = SHOWN,
                  drawn_id: int | None = None) -> StepSampling:
    """A step's distribution reshaped by the settings (banned: every special token but the end token, as sample()
    does); only softmaxes over one row of log-probabilities. The tokens shown are the `shown` most probable that
    can be drawn: a special token that never is (<s>, padding) is left out, and named in never_drawn when it
    would have been among them. `drawn_id` (the token a sample drew here) is added last when not among them."""
    assert isinstance(model, Generates)             # only a model that writes has steps to sample
    row = torch.tensor(np.asarray(log_probs, dtype=np.float32))       # a copy: cached arrays are read-only
    own = row.exp()
    banned = never_sampled(model.start_id, model.end_id, model.special_ids | {model.pad_id})
    drawn = sampling_probabilities(row, settings, banned)
    kept = drawn > 0
    ranked = own.topk(min(shown + len(banned), own.shape[-1])).indices.tolist()
    never = set(banned)
    top = [token for token in ranked if token not in never][:shown]
    skipped = [token for token in ranked[: ranked.index(top[-1]) if top else 0] if token in never]
    if drawn_id is not None and drawn_id not in top:
        top.append(int(drawn_id))
    entropy = float(-(drawn[kept] * drawn[kept].log()).sum())
    return StepSampling(top, model.pieces(top), own[top].tolist(), drawn[top].tolist(), int(kept.sum()),
                        float(own[kept].sum()), entropy, settings, drawn_id,
                        model.pieces(skipped) if skipped else [])


def step_sampling_table(step: StepSampling) -> pd.DataFrame:
    return pd.DataFrame({"token": step.tokens, "model (T = 1)": step.model_probs, "sampled from": step.sampled_probs})
