"""Sampling the next token instead of taking the most probable one: temperature, top-k and nucleus (top-p)
filtering, with a seed so that the same settings give the same output.

The warpers are transformers' own, in generate()'s order (temperature, then top-k, then top-p): logits ÷ T, keep the
k most probable, then keep the smallest set of the most probable tokens whose probability adds up to at least p
(Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration"), renormalised. Temperature 0 is greedy: the
most probable token.

Every call draws from a torch.Generator of its own, seeded by the call: Streamlit's sessions share the process,
so the global random state would make one person's sample depend on another's clicks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from .decoding import excluded_tokens
from .errors import ExplorerError


class SamplingError(ExplorerError):
    """Sampling settings out of range; the message names the setting and the range."""


@dataclass(frozen=True)
class Sampling:
    temperature: float = 1.0    # 0: greedy (the most probable token)
    top_k: int = 0              # keep the k most probable tokens; 0: all of them
    top_p: float = 1.0          # keep the smallest set of most probable tokens holding at least this mass
    seed: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)
                and self.temperature >= 0):
            raise SamplingError(f"temperature {self.temperature!r}: expected a number ≥ 0 (0 = greedy)")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0:
            raise SamplingError(f"top-k {self.top_k!r}: expected a whole number ≥ 0 (0 = no limit)")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise SamplingError(f"top-p {self.top_p!r}: expected a number in (0, 1] (1 = no limit)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2 ** 63:
            raise SamplingError(f"seed {self.seed!r}: expected a whole number ≥ 0")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def sampling_probabilities(logits: torch.Tensor, sampling: Sampling, banned: Iterable[int] = ()) -> torch.Tensor:
    """The distribution a token is drawn from, [..., vocab]: the banned ids get 0, then temperature, top-k and
    top-p, renormalised. Greedy (temperature 0): all the mass on the most probable allowed token."""
    logits = logits.float()
    banned = [i for i in banned if 0 <= i < logits.shape[-1]]
    if banned:
        logits = logits.index_fill(-1, torch.tensor(banned, dtype=torch.long), float("-inf"))
    if sampling.greedy:
        return torch.zeros_like(logits).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    rows = logits.reshape(-1, logits.shape[-1])             # the warpers read [batch, vocab]
    return torch.softmax(warpers(sampling, logits.shape[-1])(None, rows), -1).reshape(logits.shape)


def warpers(sampling: Sampling, vocabulary: int):
    """transformers' own temperature, top-k and top-p warpers, in generate()'s order; a filtered token's logit is
    −∞, so the softmax after them renormalises what is kept. Imported here, when a token is first sampled: at the
    module's top it put transformers (0.56 s) into every start of the app and the command line, via decoding_steps."""
    from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    steps = [TemperatureLogitsWarper(sampling.temperature)]
    if 0 < sampling.top_k < vocabulary:
        steps.append(TopKLogitsWarper(sampling.top_k))
    if sampling.top_p < 1:
        steps.append(TopPLogitsWarper(sampling.top_p))
    return LogitsProcessorList(steps)


# history (output ids so far) → the next token's logits [vocab]
NextLogits = Callable[[list[int]], torch.Tensor]


def sample_sequence(next_logits: NextLogits, sampling: Sampling, end: int | None, max_steps: int,
                    banned: Iterable[int] = ()) -> list[int]:
    """Output ids (without the end token), one drawn token at a time until the end token or max_steps."""
    generator = torch.Generator().manual_seed(sampling.seed)
    banned = list(banned)
    output: list[int] = []
    for _ in range(max_steps):
        probabilities = sampling_probabilities(next_logits(output), sampling, banned)
        token = (int(probabilities.argmax()) if sampling.greedy
                 else int(torch.multinomial(probabilities, 1, generator=generator)))
        if token == end:
            break
        output.append(token)
    return output


def never_sampled(start: int | None, end: int | None, special: Iterable[int | None]) -> list[int]:
    """The ids no sample continues with: every special token but the end token (as in beam search)."""
    return excluded_tokens(start, end, special)
