"""Named hook points whose hooks and head masks live in the current call, never on the module.

Streamlit serves every browser session from its own thread against one cached model. A hook registered
on a shared module (``register_forward_hook``) or a head mask kept in an attribute would leak into
other sessions' results. Here the active hooks and masks sit in a ``contextvars.ContextVar``: a
``with model_run(...)`` block sets them for the current thread (or asyncio task) only.
"""

from __future__ import annotations

import contextvars
import fnmatch
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from .errors import ExplorerError
from .fast_inference import FastCall
from .vocabulary import (
    ATTENTION_KINDS,
    ATTENTION_VALUES,
    LAYER_VALUES,
    STACK_VALUES,
    STACKS,
    Kind,
    attention_hook,
    check_kind,
    layer_hook,
    stack_hook,
)

# A hook receives the value and the hook point's name; returning a tensor replaces the value.
Hook = Callable[[torch.Tensor, str], "torch.Tensor | None"]


class HookNameError(ExplorerError):
    """A hook name or pattern that matches no hook point of the model (a typo would capture nothing)."""


@dataclass
class RunState:
    """What one call of the model should do beyond the plain forward pass."""

    hooks: dict[str, list[Hook]] = field(default_factory=dict)
    # kind -> gate of shape [layers, heads] (or [layers, batch, heads], one per sentence); multiplies each
    # head's z before the output projection.
    head_mask: dict[Kind, torch.Tensor] = field(default_factory=dict)
    # A replaced value whose effect lands further on in the same layer (a pre-norm resid_mid: hugging_face.py)
    carried: dict[str, torch.Tensor] = field(default_factory=dict)


_ACTIVE: contextvars.ContextVar[RunState | None] = contextvars.ContextVar("attention_explorer_run", default=None)


class HookPoint(FastCall):
    """Identity module marking a value that can be read or replaced by a per-call hook (called ~60 times per
    decoding step, hence FastCall)."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # filled in by name_hook_points() once the model is assembled

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        state = _ACTIVE.get()
        if state is None or not state.hooks:   # the common case, ~60 times a decoding step: no further call
            return x
        return apply_hooks(self.name, x)


def apply_hooks(name: str, x: torch.Tensor) -> torch.Tensor:
    """Run the current call's hooks for the hook point `name` on x (each may replace it); x when there are none."""
    state = _ACTIVE.get()
    if state is None or not state.hooks:
        return x
    for hook in state.hooks.get(name, ()):
        replaced = hook(x, name)
        if replaced is not None:
            x = replaced
    return x


def carry(name: str, difference: torch.Tensor) -> None:
    """Keep, for this call, the difference a hook made to `name` until take_carried applies it further on."""
    state = _ACTIVE.get()
    if state is not None:
        state.carried[name] = difference


def take_carried(name: str) -> torch.Tensor | None:
    state = _ACTIVE.get()
    return None if state is None else state.carried.pop(name, None)


def in_plain_call() -> bool:
    """No hooks or head masks are active in this call: the model is itself."""
    return _ACTIVE.get() is None


def is_hooked(name: str) -> bool:
    """Whether the current call has a hook on `name`: a value that costs work to produce is made only then."""
    state = _ACTIVE.get()
    return state is not None and name in state.hooks


def name_hook_points(model: torch.nn.Module) -> list[str]:
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
    gates = state.head_mask.get(Kind(kind))
    return None if gates is None else gates[layer]


def matching_names(hook_names: list[str], patterns: str | list[str]) -> list[str]:
    """The hook names matching any of the glob patterns; HookNameError names each pattern that matches none."""
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in hook_names)]
    if unmatched:
        example = ", ".join(hook_names[:3] + [attention_hook("cross", 0, "pattern")])
        raise HookNameError(f"no hook point is called {', '.join(map(repr, unmatched))}; names look like {example} "
                            f"(model.hook_names lists all {len(hook_names)})")
    return [n for n in hook_names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


@contextmanager
def model_run(
    hooks: Mapping[str, Hook | list[Hook]] | None = None,
    head_mask: Mapping[Kind, torch.Tensor] | None = None,
    hook_names: list[str] | None = None,
) -> Iterator[RunState]:
    """Activate hooks and head masks for the model calls inside the block (this thread only).

    hook_names (the model's, model.hook_names) is required with hooks: a hook on a name that is not a hook
    point would silently never run, so it raises HookNameError instead.
    Blocks nest: an inner block adds its hooks after the outer block's and its head masks replace the
    outer ones kind by kind, so e.g. a capture inside a pruning block sees the pruned model.
    """
    if hooks:
        if hook_names is None:
            raise TypeError("model_run(hooks=...) needs hook_names=model.hook_names, so a misspelt name is caught")
        unknown = [name for name in hooks if name not in hook_names]
        if unknown:
            raise HookNameError(f"no hook point is called {', '.join(map(repr, unknown))} (hooks name hook points "
                                "exactly; model.hook_names lists them, capture() takes patterns)")
    outer = _ACTIVE.get()
    state = RunState() if outer is None else RunState({k: list(v) for k, v in outer.hooks.items()}, dict(outer.head_mask))
    for name, hook in (hooks or {}).items():
        state.hooks.setdefault(name, []).extend(hook if isinstance(hook, (list, tuple)) else [hook])
    for kind, gate in (head_mask or {}).items():
        state.head_mask[check_kind(kind)] = gate
    token = _ACTIVE.set(state)
    try:
        yield state
    finally:
        _ACTIVE.reset(token)


class ActivationCache(dict):
    """name -> captured tensor, read by meaning rather than by spelling names: by full name, or by shorthand
    (value, layer[, where]) as TransformerLens's cache is: cache["pattern", 0] on a model with one kind of
    attention, cache["pattern", 0, "cross"] (or "encoder", "decoder") on an encoder–decoder; a layer's value
    (cache["resid_post", 2]) by stack; a stack's (cache["embed"], cache["embed", "decoder"])."""

    def __getitem__(self, key):
        if isinstance(key, str) and key in (*STACK_VALUES, *ATTENTION_VALUES, *LAYER_VALUES):
            key = (key,)                                # cache["embed"]: the one stack's
        return super().__getitem__(self.name_of(key) if isinstance(key, tuple) else key)

    def name_of(self, key: tuple) -> str:
        """The full name a shorthand key reads; KeyError when it names nothing captured, or more than one value."""
        value, *rest = key
        where = next((part for part in rest if isinstance(part, str)), None)
        layer = next((part for part in rest if isinstance(part, int)), None)
        if value in STACK_VALUES:
            candidates = [stack_hook(stack, value) for stack in STACKS if where in (None, stack)]
        elif layer is None:
            raise KeyError(f"cache[{key!r}]: say which layer, e.g. cache[{value!r}, 0]")
        elif value in ATTENTION_VALUES:
            candidates = [attention_hook(kind, layer, value) for kind in ATTENTION_KINDS if where in (None, kind)]
        elif value in LAYER_VALUES:
            candidates = [layer_hook(stack, layer, value) for stack in STACKS if where in (None, stack)]
        else:
            raise KeyError(f"cache[{key!r}]: {value!r} is no value; values are {', '.join(ATTENTION_VALUES)}, "
                           f"{', '.join(LAYER_VALUES)} and {', '.join(STACK_VALUES)}")
        found = [name for name in candidates if name in self]
        if not found:
            raise KeyError(f"cache[{key!r}]: no captured value is named so (list(cache) names what this run kept)")
        if len(found) > 1:
            raise KeyError(f"cache[{key!r}]: {' and '.join(found)} are named so; add where it is: \"encoder\", "
                           "\"decoder\" or \"cross\"")
        return found[0]

    def attention(self, kind: str, layer: int, value: str) -> torch.Tensor:
        """One attention block's value, e.g. cache.attention("cross", 1, "pattern") → [batch, heads, query, key]."""
        return self[attention_hook(kind, layer, value)]

    def layers(self, kind: str, value: str) -> torch.Tensor:
        """The value for every layer of one kind, stacked on axis 1: e.g. patterns [batch, layers, heads, query, key]."""
        found: list[torch.Tensor] = []
        while attention_hook(kind, len(found), value) in self:
            found.append(self.attention(kind, len(found), value))
        if not found:
            raise KeyError(f"nothing captured for {attention_hook(kind, '*', value)}")
        return torch.stack(found, 1)


@contextmanager
def capture(model_hook_names: list[str], patterns: str | list[str] = "*",
            head_mask: Mapping[Kind, torch.Tensor] | None = None) -> Iterator[ActivationCache]:
    """Record the values at hook points whose names match the glob pattern(s); a pattern that matches no
    hook point raises HookNameError.

    Yields an ActivationCache filled during the block: name -> detached tensor. A hook point reached several
    times (incremental decoding) keeps its last value.
    """
    wanted = matching_names(model_hook_names, patterns)
    cache = ActivationCache()

    def record(x: torch.Tensor, name: str) -> None:
        cache[name] = x.detach()

    with model_run({name: record for name in wanted}, head_mask=head_mask, hook_names=model_hook_names):
        yield cache
