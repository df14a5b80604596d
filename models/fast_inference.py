"""Inference-speed layouts, kept apart so that models/transformer.py reads like the architecture.

Greedy decoding on a CPU is bound by reading weights from memory and by Python overhead per module call,
so without gradients the model multiplies by copies of its weights in faster layouts and skips part of
nn.Module.__call__. None of this changes what is computed: the same fp32 products, summed in another
order at most (logits agree to ~1e-6, tested). Every copy is rebuilt when its source changes.

Measured for x [1, in] with the weights out of cache: [256, 1024] 60 µs vs 130 µs multiplying by its
[1024, 256] transpose, [256, 8000] 330 vs 1,010 µs; one [d, 3d] QKV product instead of three [d, d] is
~9% of a greedy step; skipping nn.Module.__call__'s machinery for the ~60 module calls of a step is a
third of its per-step overhead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as torch_module

if TYPE_CHECKING:                    # transformer.py imports this module: for the annotations only
    from .transformer import Projection


def needs_gradients(weight: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and weight.requires_grad


def derived_weight(owner: nn.Module, name: str, sources: tuple[torch.Tensor, ...], build: Callable) -> torch.Tensor:
    """build(*sources): a copy of weights in a faster layout, kept on owner and rebuilt whenever a source
    changes. Training steps, load_state_dict and in-place edits all bump a tensor's version counter, and
    replacing .data changes its storage, so a stale copy is never used."""
    # Checked on every call of a decoding step, so built without a generator (a third of this function's time).
    key: tuple                       # (pointer, version) of the one source, or a tuple of them
    if len(sources) == 1:
        key = (sources[0].data_ptr(), sources[0]._version)
    else:
        key = tuple([(source.data_ptr(), source._version) for source in sources])
    cached = owner.__dict__.get(name)
    if cached is None or cached[0] != key:
        with torch.inference_mode(False), torch.no_grad():  # a normal tensor: usable outside inference mode too
            cached = (key, build(*sources).contiguous())
        owner.__dict__[name] = cached  # one assignment: concurrent sessions see the old or the new copy, both right
    return cached[1]


def linear(owner: nn.Module, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """x Wᵀ + b for W stored [out, in]. A one-token step multiplies a [1, in] row by W, and MKL streams a
    matrix fastest when its rows are long: without gradients a W with at least as many outputs as inputs
    (the feed-forward's [1024, 256], the square attention projections) is multiplied as a contiguous
    [in, out] copy; the feed-forward's second matrix ([256, 1024]) is best as it is."""
    if needs_gradients(weight):
        return F.linear(x, weight, bias)
    in_out = derived_weight(owner, "_in_out", (weight,), torch.t) if weight.shape[0] >= weight.shape[1] else weight.t()
    # One 2-D addmm: for the [1, 1, d] input of a decoding step it skips F.linear's batched-input handling.
    return torch.addmm(bias, x.reshape(-1, x.shape[-1]), in_out).view(*x.shape[:-1], -1)


def fused_qkv(owner: nn.Module, x: torch.Tensor, projections: tuple[Projection, Projection, Projection]) -> list[torch.Tensor]:
    """x [W_q | W_k | W_v] + [b_q | b_k | b_v], split back into q, k, v: one wide product instead of three
    (each output column is the same dot product, bit for bit)."""
    weight = derived_weight(owner, "_qkv_weight", tuple(p.weight for p in projections), lambda *w: torch.cat(w).t())
    bias = derived_weight(owner, "_qkv_bias", tuple(p.bias for p in projections), lambda *b: torch.cat(b))
    qkv = torch.addmm(bias, x.reshape(-1, x.shape[-1]), weight).view(*x.shape[:-1], -1)
    return list(qkv.split(weight.shape[1] // 3, -1))


def transposed_output_projection(owner: nn.Module, x: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
    """x @ embeddingᵀ by a contiguous transposed copy (the same numbers, ~2x faster per decoding step)."""
    transposed = derived_weight(owner, "_transposed_embedding", (embedding,), torch.t)
    return (x.reshape(-1, x.shape[-1]) @ transposed).view(*x.shape[:-1], -1)


def global_torch_hooks() -> bool:
    """Whether any hook is registered for every module at once (torch.nn.modules.module.register_module_*)."""
    return bool(torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks
                or torch_module._global_backward_hooks or torch_module._global_backward_pre_hooks)


@functools.cache
def _torch_called(cls: type) -> type:
    """cls, but called through nn.Module.__call__ (so torch's module hooks run)."""
    return type(cls.__name__, (cls,), {"__call__": nn.Module.__call__, "__module__": cls.__module__})


class FastCall(nn.Module):
    """A module called straight through forward: nn.Module.__call__ exists to run torch's own module hooks,
    which this project does not need (its hooks are per call, models/hooks.py).

    But tools built on torch hooks (Captum and others) must still work: registering a torch hook on such a
    module turns it (this instance only) into an ordinary module called through nn.Module.__call__, and
    Transformer.encode/decode do the same for every module when a global module hook is registered.
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "__call__" not in cls.__dict__:
            # Looked up on the class: no per-call check at all. setattr: mypy forbids assigning to a method.
            setattr(cls, "__call__", cls.forward)  # noqa: B010

    def use_torch_call(self) -> None:
        if type(self).__call__ is not nn.Module.__call__:
            cls: type = type(self)   # plain `type`: mypy takes a type[X] for unhashable (python/mypy#11470)
            self.__class__ = _torch_called(cls)

    def register_forward_hook(self, *args, **kwargs):
        self.use_torch_call()
        return super().register_forward_hook(*args, **kwargs)

    def register_forward_pre_hook(self, *args, **kwargs):
        self.use_torch_call()
        return super().register_forward_pre_hook(*args, **kwargs)

    def register_full_backward_hook(self, *args, **kwargs):
        self.use_torch_call()
        return super().register_full_backward_hook(*args, **kwargs)

    def register_full_backward_pre_hook(self, *args, **kwargs):
        self.use_torch_call()
        return super().register_full_backward_pre_hook(*args, **kwargs)

    def register_backward_hook(self, *args, **kwargs):
        self.use_torch_call()
        return super().register_backward_hook(*args, **kwargs)


def use_torch_calls_if_hooked_globally(model: nn.Module) -> None:
    """Every FastCall module of model goes through nn.Module.__call__ once a global module hook exists."""
    if global_torch_hooks():
        for module in model.modules():
            if isinstance(module, FastCall):
                module.use_torch_call()
