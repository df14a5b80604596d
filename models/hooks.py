"""Named hook points whose hooks and head masks live in the current call, never on the module.

Streamlit serves every browser session from its own thread against one cached model. A hook registered
on a shared module (``register_forward_hook``) or a head mask kept in an attribute would leak into
other sessions' results. Here the active hooks and masks sit in a ``contextvars.ContextVar``: a
``with model_run(...)`` block sets them for the current thread (or asyncio task) only.
"""

from __future__ import annotations

import contextvars
import fnmatch
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

import torch
from torch import nn

# A hook receives the value and the hook point's name; returning a tensor replaces the value.
Hook = Callable[[torch.Tensor, str], "torch.Tensor | None"]

ATTENTION_KINDS = ("encoder", "decoder", "cross")


@dataclass
class RunState:
    """What one call of the model should do beyond the plain forward pass."""

    hooks: dict[str, list[Hook]] = field(default_factory=dict)
    # kind -> gate of shape [layers, heads] (or [layers, batch, heads], one per sentence); multiplies each
    # head's z before the output projection.
    head_mask: dict[str, torch.Tensor] = field(default_factory=dict)


_ACTIVE: contextvars.ContextVar[RunState | None] = contextvars.ContextVar("attention_explorer_run", default=None)


class HookPoint(nn.Module):
    """Identity module marking a value that can be read or replaced by a per-call hook."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # filled in by name_hook_points() once the model is assembled

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        state = _ACTIVE.get()
        if state is None or not state.hooks:
            return x
        for hook in state.hooks.get(self.name, ()):
            replaced = hook(x, self.name)
            if replaced is not None:
                x = replaced
        return x

    # Called ~60 times per decoding step: skip nn.Module.__call__'s machinery (torch's own module hooks,
    # which these identity modules never use). This is a third of the per-step overhead of greedy decoding.
    __call__ = forward


def name_hook_points(model: nn.Module) -> list[str]:
    """Give every HookPoint its dotted path as a name; returns the names in forward order."""
    names = []
    for name, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = name
            names.append(name)
    return names


def current_head_gate(kind: str, layer: int) -> torch.Tensor | None:
    """The gate [heads] for one attention block in the current call, or None when not pruned."""
    state = _ACTIVE.get()
    if state is None:
        return None
    gates = state.head_mask.get(kind)
    return None if gates is None else gates[layer]


@contextmanager
def model_run(
    hooks: Mapping[str, Hook | list[Hook]] | None = None,
    head_mask: Mapping[str, torch.Tensor] | None = None,
) -> Iterator[RunState]:
    """Activate hooks and head masks for the model calls inside the block (this thread only).

    Blocks nest: an inner block adds its hooks after the outer block's and its head masks replace the
    outer ones kind by kind, so e.g. a capture inside a pruning block sees the pruned model.
    """
    outer = _ACTIVE.get()
    state = RunState() if outer is None else RunState({k: list(v) for k, v in outer.hooks.items()}, dict(outer.head_mask))
    for name, hook in (hooks or {}).items():
        state.hooks.setdefault(name, []).extend(hook if isinstance(hook, (list, tuple)) else [hook])
    for kind, gate in (head_mask or {}).items():
        if kind not in ATTENTION_KINDS:
            raise ValueError(f"unknown attention kind {kind!r}; expected one of {ATTENTION_KINDS}")
        state.head_mask[kind] = gate
    token = _ACTIVE.set(state)
    try:
        yield state
    finally:
        _ACTIVE.reset(token)


@contextmanager
def capture(model_hook_names: list[str], patterns: str | list[str] = "*",
            head_mask: Mapping[str, torch.Tensor] | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Record the values at hook points whose names match the glob pattern(s).

    Yields a dict filled during the block: name -> detached tensor. A hook point reached several times
    (incremental decoding) keeps its last value.
    """
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    wanted = [n for n in model_hook_names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    cache: dict[str, torch.Tensor] = {}

    def record(x: torch.Tensor, name: str) -> None:
        cache[name] = x.detach()

    with model_run({name: record for name in wanted}, head_mask=head_mask):
        yield cache
