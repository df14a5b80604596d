"""HeadSpec: naming attention heads as text (`enc.0.3`, `dec.2.*`, `cross.1.5`) and turning sets of them
into the head-mask gates the model takes per call."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from explorer.models.errors import ExplorerError
from explorer.models.interface import AttentionModel, ExplorerModel
from explorer.models.vocabulary import ATTENTION_KINDS, KIND_BY_SHORT_NAME, SHORT_NAMES, Kind


class HeadSpecError(ExplorerError):
    """A head specification that does not name heads of this model."""


@dataclass(frozen=True, order=True)
class HeadSpec:
    kind: Kind
    layer: int
    head: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))       # a kind's text ("encoder") is its Kind

    def __str__(self) -> str:
        return f"{self.kind.short}.{self.layer}.{self.head}"


def _indices(text: str, count: int, what: str, item: str) -> list[int]:
    if text == "*":
        return list(range(count))
    if not text.isdigit() or int(text) >= count:
        raise HeadSpecError(f"{item!r}: {what} must be * or a number from 0 to {count - 1}")
    return [int(text)]


def parse_heads(spec: str, model: ExplorerModel) -> list[HeadSpec]:
    """'enc.0.3,dec.2.*' → sorted HeadSpecs. Raises HeadSpecError with the offending item."""
    heads: set[HeadSpec] = set()
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        parts = item.split(".")
        if len(parts) != 3 or parts[0] not in KIND_BY_SHORT_NAME:
            raise HeadSpecError(f"{item!r}: expected KIND.LAYER.HEAD with KIND enc, dec or cross, e.g. enc.0.3 or dec.2.*")
        kind = KIND_BY_SHORT_NAME[parts[0]]
        if not model.layers(kind):
            raise HeadSpecError(f"{item!r}: this model has no {kind} attention; its kinds are "
                                f"{', '.join(SHORT_NAMES[k] for k in model.kinds)}")
        for layer in _indices(parts[1], model.layers(kind), "layer", item):
            for head in _indices(parts[2], model.heads, "head", item):
                heads.add(HeadSpec(kind, layer, head))
    return sorted(heads)


# A set of heads as it crosses the app: sorted, no repeats, hashable (a cache key). Parsed from text only at the
# edges: the CLI, the URL, a saved file.
HeadSet = tuple[HeadSpec, ...]


def head_set(heads: Iterable[HeadSpec]) -> HeadSet:
    return tuple(sorted(set(heads)))


def format_heads(heads: Iterable[HeadSpec]) -> str:
    return ",".join(str(h) for h in sorted(heads))


def all_heads(model: ExplorerModel) -> list[HeadSpec]:
    return [HeadSpec(kind, layer, head) for kind in ATTENTION_KINDS
            for layer in range(model.layers(kind)) for head in range(model.heads)]


def live_heads(pruned: Iterable[HeadSpec], model: ExplorerModel, kind: str) -> np.ndarray | None:
    """[layers, heads] of one kind: 1 for a head at work, 0 for a pruned one; None when none of this kind is pruned."""
    gates = head_mask([spec for spec in pruned if spec.kind == kind], model)
    return gates[Kind(kind)].cpu().numpy() if kind in gates else None


def head_mask(pruned: Iterable[HeadSpec], model: AttentionModel) -> dict[Kind, torch.Tensor]:
    """Gates [layers, heads] per kind: 0 for a pruned head, 1 otherwise. Empty when nothing is pruned."""
    pruned = list(pruned)
    if not pruned:
        return {}
    gates = {kind: torch.ones(model.layers(kind), model.heads) for kind in ATTENTION_KINDS if model.layers(kind)}
    for spec in pruned:
        gates[spec.kind][spec.layer, spec.head] = 0.0
    return gates
