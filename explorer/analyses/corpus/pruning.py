"""Pruning heads and watching the output change: which heads to drop, the pruning curve, token-level diffs.

The pruning curve repeats Michel et al. 2019 (Fig. 2) and Voita et al. 2019: BLEU as more and more heads are
masked, in order of increasing importance versus in random orders (several seeds).
"""

from __future__ import annotations

import difflib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from explorer.analyses.corpus.corpus_scoring import Scorer
from explorer.analyses.corpus.results import ImportanceReport, PruningCurve

# Which gradient importance to prune by (defaults.py): Michel et al. normalise each layer's scores; on held-out data
# the raw scores pruned better (docs/heads.md, "Importance and pruning"), so raw is the default.
from explorer.analyses.defaults import DEFAULT_NORMALISATION, NORMALISATIONS
from explorer.capture.forcing import forced_log_probs
from explorer.capture.head_sets import HeadSpec, all_heads, head_mask
from explorer.capture.trace import Trace
from explorer.models.hooks import model_run
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import KIND_BY_SHORT_NAME

CURVE_KINDS = ("enc", "dec", "cross", "all")



def importance_scores(report: ImportanceReport | dict,
                      normalisation: str = DEFAULT_NORMALISATION) -> dict[HeadSpec, float]:
    """Per head the score to prune by: gradient importance, raw or normalised per layer.

    With one head per layer the normalisation makes every score 1 and the order meaningless, so the raw
    gradient importance is used there instead.
    """
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {normalisation!r}; expected one of {', '.join(NORMALISATIONS)}")
    heads = ImportanceReport.from_json(report).heads
    one_head_per_layer = max(h.head for h in heads) == 0
    measure = NORMALISATIONS["raw" if one_head_per_layer else normalisation]
    return {HeadSpec(h.kind, h.layer, h.head): h.measure(measure) for h in heads if h.measure(measure) is not None}


def importance_order(scores: dict[HeadSpec, float], heads: list[HeadSpec]) -> list[HeadSpec]:
    """Least important first; ties broken by head name so the order is reproducible."""
    return sorted(heads, key=lambda h: (scores.get(h, 0.0), h))


def least_important(scores: dict[HeadSpec, float], fraction: float, heads: list[HeadSpec]) -> list[HeadSpec]:
    if not 0 <= fraction <= 1:
        raise ValueError(f"the fraction of heads to prune must be between 0 and 1, got {fraction}")
    return importance_order(scores, heads)[: round(fraction * len(heads))]


def curve_heads(kind: str, every: list[HeadSpec]) -> list[HeadSpec]:
    return every if kind == "all" else [h for h in every if h.kind == KIND_BY_SHORT_NAME[kind]]


def pruning_curve(scorer: Scorer, scores: dict[HeadSpec, float],
                  kinds: tuple[str, ...] = CURVE_KINDS, steps: int = 10, seeds: int = 3,
                  progress: Callable[[float], None] | None = None,
                  other_orders: dict[str, dict[HeadSpec, float]] | None = None, corpus_name: str = "",
                  importance_corpus: str = "", measure: str = "", set_scores=None) -> dict:
    """Per kind: quality (BLEU, or perplexity for language models) at fractions 0, 1/steps, …, 1 of its heads
    pruned, by importance and in random orders.

    other_orders: more importance orders to draw beside the main one (e.g. the other normalisation), by name.
    The curve should be drawn on other sentences than the importance was measured on (out-of-sample): the
    names of both corpora are kept in the result so the figure can say which.
    set_scores: score every head set of the curve in one call (importance.SetScores, e.g. on Ray) instead of
    one after another here.
    """
    other_orders = other_orders or {}
    started = time.perf_counter()
    every = all_heads(scorer.model)
    kinds = tuple(kind for kind in kinds if curve_heads(kind, every))     # the kinds the model has
    order_names = ["importance", *other_orders, *(f"random {s}" for s in range(seeds))]
    fractions = [i / steps for i in range(steps + 1)]
    orders: dict[tuple[str, str], list[HeadSpec]] = {}
    for kind in kinds:
        heads = curve_heads(kind, every)
        for order_name in order_names:
            if order_name == "importance":
                orders[kind, order_name] = importance_order(scores, heads)
            elif order_name in other_orders:
                orders[kind, order_name] = importance_order(other_orders[order_name], heads)
            else:
                order = list(heads)
                random.Random(int(order_name.split()[1])).shuffle(order)
                orders[kind, order_name] = order
    counts = {kind: [round(f * len(curve_heads(kind, every))) for f in fractions] for kind in kinds}
    # The unpruned and fully pruned points (and any other repeated set) are shared by every order: scored once.
    memo: dict[frozenset, float] = {}
    if set_scores is not None:
        wanted = list(dict.fromkeys(frozenset(order[:count]) for (kind, _), order in orders.items()
                                    for count in counts[kind]))
        scored = set_scores([sorted(heads) for heads in wanted], True, progress)
        memo = {heads: round(quality, 2) for heads, (_, quality) in zip(wanted, scored)}
    total, done = len(orders) * (steps + 1), 0

    def quality(pruned: list[HeadSpec]) -> float:
        key = frozenset(pruned)
        if key not in memo:
            memo[key] = round(scorer.quality(head_mask(pruned, scorer.model)), 2)
        return memo[key]

    result = {"pairs": scorer.size, "metric": scorer.metric, "steps": steps, "seeds": seeds, "corpus": corpus_name,
              "importance_corpus": importance_corpus, "measure": measure, "kinds": {}}
    for kind in kinds:
        curves = {}
        for order_name in order_names:
            points = []
            for count in counts[kind]:
                points.append(quality(orders[kind, order_name][:count]))
                done += 1
                if progress and set_scores is None:
                    progress(done / total)
            curves[order_name] = points
        runs = np.array([curves[f"random {s}"] for s in range(seeds)]) if seeds else np.zeros((0, len(fractions)))
        result["kinds"][kind] = {
            "heads": len(curve_heads(kind, every)), "fractions": fractions, "pruned": counts[kind],
            "importance": curves["importance"],
            "random_mean": [round(float(v), 2) for v in runs.mean(0)] if seeds else [],
            "random_std": [round(float(v), 2) for v in runs.std(0)] if seeds else [],
            "random_runs": runs.tolist(), "other_orders": {name: curves[name] for name in other_orders}}
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def curve_rows(curve: PruningCurve | dict) -> list[dict]:
    """The curve as flat rows (kind, order, fraction, heads pruned, BLEU or perplexity) for CSV export."""
    curve = PruningCurve.from_json(curve)
    metric = curve.quality.lower()
    rows = []
    for kind, data in curve.kinds.items():
        for i, fraction in enumerate(data.fractions):
            rows.append({"kind": kind, "order": "importance", "fraction": fraction, "pruned": data.pruned[i],
                         metric: data.importance[i]})
            for name, points in (data.other_orders or {}).items():
                rows.append({"kind": kind, "order": name, "fraction": fraction, "pruned": data.pruned[i],
                             metric: points[i]})
            for seed, run in enumerate(data.random_runs):
                rows.append({"kind": kind, "order": f"random {seed}", "fraction": fraction,
                             "pruned": data.pruned[i], metric: run[i]})
    return rows


@dataclass
class DiffPiece:
    operation: str      # equal | delete | insert | replace
    before: list[str]
    after: list[str]


def token_diff(before: list[str], after: list[str]) -> list[DiffPiece]:
    """Piece-level diff of the unpruned translation (before) against the pruned one (after)."""
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return [DiffPiece(op, before[i1:i2], after[j1:j2]) for op, i1, i2, j1, j2 in matcher.get_opcodes()]


@dataclass
class StepComparison:
    tokens: list[str]          # the unpruned translation's pieces + </s>
    unpruned: list[float]      # each token's probability under the unpruned model
    pruned: list[float]        # … and under the pruned model, given the same prefix
    kl: list[float]            # KL(unpruned ‖ pruned) of each step's whole distribution (nats)


@torch.no_grad()
def compare_steps(model: ExplorerModel, trace: Trace, pruned: list[HeadSpec]) -> StepComparison:
    """Teacher-force the unpruned output of a trace through the model with and without the pruned heads."""
    chosen = [step.chosen_id for step in trace.steps]
    source = trace.source_ids if model.has("encoder") else trace.target_ids[: trace.first_step_position + 1]
    base = forced_log_probs(model, source, chosen)
    with model_run(head_mask=head_mask(pruned, model)):
        changed = forced_log_probs(model, source, chosen)
    index = torch.arange(len(chosen))
    kl = (base.exp() * (base - changed)).sum(-1)
    return StepComparison([step.chosen for step in trace.steps], base[index, chosen].exp().tolist(),
                          changed[index, chosen].exp().tolist(), kl.clamp_min(0).tolist())
