"""The CLI's sampling options of `translate` and `generate`: --temperature, --top-k, --top-p, --seed, read as text
and checked here, so that a bad value is one line naming it (error: …, exit 1), like every other input error."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from explorer.models.sampling import Sampling


def add_sampling_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--temperature", metavar="T",
                     help="sample each token from the model's distribution at temperature T (logits / T) instead of "
                          "taking the most probable one; absent or 0: greedy decoding, or beam search with --beam, "
                          "as without it")
    sub.add_argument("--top-k", metavar="K", help="sample from the K most probable tokens only (0, the default: all)")
    sub.add_argument("--top-p", metavar="P",
                     help="nucleus sampling: from the smallest set of most probable tokens whose probability adds up "
                          "to at least P, in (0, 1] (1, the default: all)")
    sub.add_argument("--seed", metavar="N", help="the sampler's seed, a whole number ≥ 0 (default 0): the same "
                                                  "settings and seed give the same output")


def _number(text: str | None, option: str, kind: type):
    from explorer.capture.inputs import InputError

    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        raise InputError(f"{option} {text}: expected {'a whole number' if kind is int else 'a number'}") from None


def sampling_from_arguments(args: argparse.Namespace) -> Sampling | None:
    """The sampling settings asked for, or None for greedy / beam search (no --temperature, or 0)."""
    from explorer.capture.inputs import InputError  # here, not above: --help builds the parser without torch
    from explorer.models.sampling import Sampling, SamplingError

    temperature = _number(args.temperature, "--temperature", float)
    top_k, top_p, seed = (_number(args.top_k, "--top-k", int), _number(args.top_p, "--top-p", float),
                          _number(args.seed, "--seed", int))
    try:
        settings = Sampling(temperature or 0.0, top_k or 0, 1.0 if top_p is None else top_p, seed or 0)
    except SamplingError as error:         # "top-p 1.5: expected …": named as the option and the text typed
        setting, reason = str(error).split(" ", 1)[0], str(error).split(": ", 1)[1]
        raise InputError(f"--{setting} {getattr(args, setting.replace('-', '_'))}: {reason}") from None
    shaping = [name for name, value in (("--top-k", top_k), ("--top-p", top_p), ("--seed", seed)) if value is not None]
    if settings.greedy:
        if shaping:
            raise InputError(f"{' and '.join(shaping)} {'applies' if len(shaping) == 1 else 'apply'} only when "
                             "sampling: add --temperature T (> 0)")
        return None
    if getattr(args, "beam", 1) > 1:
        raise InputError(f"--temperature {args.temperature} samples one output token by token; it does not combine "
                         f"with --beam {args.beam}")
    return settings
