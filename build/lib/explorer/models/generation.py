"""Beam search and sampling over any model that generates (models/interface.py), through its forward alone.

Each step runs the decoder over the whole history again: simple, and fast enough for one sentence. A model with a
beam search of its own (`CachedBeamSearch`: ours keeps a key/value cache) is asked for it instead.
"""

from __future__ import annotations

import torch

from .decoding import BeamResult, search_beams
from .interface import Batch, CachedBeamSearch, ExplorerModel
from .sampling import Sampling, never_sampled, sample_sequence


def beam_search(model: ExplorerModel, source_ids: list[int], beam_size: int, alpha: float = 0.6) -> BeamResult:
    """Every live beam of every step (the beam tree), GNMT length penalty."""
    if isinstance(model, CachedBeamSearch):
        return model.beam_search(source_ids, beam_size, alpha)
    source = model.pad([source_ids]) if model.has("encoder") else None

    @torch.no_grad()
    def next_log_probs(last: torch.Tensor, histories: list[list[int]]) -> torch.Tensor:
        rows = [model.decoder_input(source_ids, history)[0] for history in histories]
        encoder = None                              # the one source, once for every live beam
        if source is not None:
            encoder = Batch(source.ids.expand(len(rows), -1), source.present.expand(len(rows), -1))
        return torch.log_softmax(model.forward(encoder, model.pad(rows))[:, -1].float(), -1)

    # No hypothesis continues with padding, [CLS], a language tag… (the end token stays: it finishes one).
    return search_beams(next_log_probs, lambda parents: None, model.start_id, model.end_id, beam_size, alpha,
                        model.step_limit(len(source_ids)), exclude=model.special_ids | {model.pad_id})


def sample(model: ExplorerModel, source_ids: list[int], temperature: float = 1.0, top_k: int = 0,
           top_p: float = 1.0, seed: int = 0) -> list[int]:
    """Output ids (no prefix, no end token) drawn token by token at this temperature, from the top-k / top-p
    (nucleus) of each step's distribution (models/sampling.py), with a generator seeded by `seed`: the same
    arguments give the same output. Temperature 0 is greedy. Never continues with a special token but the end
    token. Each step runs forward over the whole history again, as beam_search does."""
    sampling = Sampling(temperature, top_k, top_p, seed)
    source = model.pad([source_ids]) if model.has("encoder") else None

    @torch.no_grad()
    def next_logits(output: list[int]) -> torch.Tensor:
        return model.forward(source, model.pad([model.decoder_input(source_ids, output)[0]]))[0, -1]

    return sample_sequence(next_logits, sampling, model.end_id, model.step_limit(len(source_ids)),
                           never_sampled(model.start_id, model.end_id, model.special_ids | {model.pad_id}))
