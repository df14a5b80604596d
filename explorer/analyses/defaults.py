"""Defaults the command line's options show: the thresholds that turn head statistics into roles
(explorer/analyses/corpus/roles.py) and the orders of heads by importance (explorer/analyses/corpus/pruning.py). A module of its
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


# The thresholds a function uses when given none: one shared instance, safe as a default argument (frozen).
DEFAULT_THRESHOLDS = Thresholds()


# Where each threshold comes from: Voita et al. 2019's own, or this project's (where the paper gives none that
# fits a role decision on our data). The roles JSON carries it beside the values, and the Heads page says it.
PAPER, OURS = "Voita et al. 2019", "this project's own"
THRESHOLD_SOURCES = {
    "positional": f"{PAPER}, §5.1: the head's top weight at one relative position at least 90% of the time",
    "syntactic_margin": f"{PAPER}, §5.2: at least 10 points above the positional baseline",
    "syntactic_min_count": f"{OURS}: a relation counts from 100 arcs, so a rare relation's few arcs decide nothing",
    "rare_rate": f"{OURS}: the head's top key is the sentence's rarest token in at least half the sentences "
                 "(the paper reports 66% for its head and sets no threshold)",
    "rare_over_chance": f"{OURS}: and at least 3× the chance of that, which guards short sentences",
}


# Voita et al. 2019 (§5.3) count rare-token hits only in sentences whose rarest token is not among the 500 most
# frequent: a sentence of common tokens has no rare token to find. A setting of the measurement (the counts change),
# not a threshold the Heads page can move afterwards; 0 counts every sentence.
RARE_COMMON_TOP = 500
RARE_FILTER_SOURCE = (f"{PAPER}, §5.3: only sentences whose rarest token is not among the {RARE_COMMON_TOP} most "
                      "frequent tokens (of the model's training corpus where it ships counts, else of the text read)")


# How prune-curve orders heads by importance: by the raw gradient importance or by it normalised per layer (Michel
# et al.'s); raw pruned better on held-out data (docs/heads.md, "Importance and pruning").
NORMALISATIONS = {"raw": "gradient_importance", "layer": "gradient_importance_normalised"}
DEFAULT_NORMALISATION = "raw"
