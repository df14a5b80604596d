"""Defaults the command line's options show: the thresholds that turn head statistics into roles
(explorer/analyses/roles.py) and the orders of heads by importance (explorer/analyses/pruning.py). A module of its
own, with nothing heavy imported, so that --help shows them without loading torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    positional: float = 0.90
    syntactic_margin: float = 0.10
    syntactic_min_count: int = 100
    rare_rate: float = 0.50
    rare_over_chance: float = 3.0


# How prune-curve orders heads by importance: by the raw gradient importance or by it normalised per layer (Michel
# et al.'s); raw pruned better on held-out data (docs/heads.md, "Importance and pruning").
NORMALISATIONS = {"raw": "gradient_importance", "layer": "gradient_importance_normalised"}
DEFAULT_NORMALISATION = "raw"
