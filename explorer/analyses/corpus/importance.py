"""Which heads matter, two ways, over a corpus.

- Gradient (Michel et al. 2019): with a gate ξ_h = 1 on every head's output, importance I_h = E_x |∂L(x)/∂ξ_h|,
  the expectation over examples x of the absolute gradient of that example's loss L(x) (mean teacher-forced
  cross-entropy over its scored tokens: a translation's target tokens, a text's next tokens, BERT's masked ones).
  Taken per sentence, not per batch: a batch's gradient lets the signs of different sentences cancel, and ranks
  heads far worse against what masking them costs. Each sentence has its own gate, so one backward pass per batch
  gives every sentence's gradient. Gradients are taken with respect to the gates only (torch.autograd.grad), so
  the shared model's parameters are never touched: another session can use the model at the same time.
- Ablation: the change in loss and in quality (BLEU, or perplexity for language models) when that head alone is
  masked.

Both work on any model through explorer/analyses/corpus/corpus_scoring.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from explorer.analyses.corpus.corpus_scoring import Scorer
from explorer.capture.head_sets import HeadSpec, all_heads, head_mask


def gradient_importance(scorer: Scorer, progress: Callable[[float], None] | None = None) -> dict[str, np.ndarray]:
    """kind -> [layers, heads]: mean over examples of |∂L(example)/∂gate| (Michel et al. 2019)."""
    totals, examples = gradient_totals(scorer, progress)
    return {kind: total / max(1, examples) for kind, total in totals.items()}


def gradient_totals(scorer: Scorer, progress: Callable[[float], None] | None = None
                    ) -> tuple[dict[str, np.ndarray], int]:
    """(kind -> [layers, heads] summed |∂L(example)/∂gate|, examples): additive over shards of a corpus."""
    model = scorer.model
    kinds = model.kinds
    totals = {kind: torch.zeros(model.layers(kind), model.heads) for kind in kinds}
    batches, examples = list(scorer.batches()), 0
    with torch.enable_grad():
        for done, (indices, batch) in enumerate(batches, start=1):
            gates = {kind: torch.ones(model.layers(kind), len(indices), model.heads, requires_grad=True)
                     for kind in kinds}
            # Examples do not interact, so the gradient of the sum w.r.t. example b's gate is ∂L(b)/∂ξ.
            grads = torch.autograd.grad(scorer.sentence_losses(batch, gates).sum(), [gates[k] for k in kinds])
            for kind, grad in zip(kinds, grads):
                totals[kind] += grad.abs().sum(1)
            examples += len(indices)
            if progress:
                progress(done / len(batches))
    return {kind: totals[kind].cpu().numpy() for kind in kinds}, examples


def layer_normalised(scores: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each layer's importances divided by their L2 norm (Michel et al. normalise per layer)."""
    return {kind: value / np.maximum(np.linalg.norm(value, axis=1, keepdims=True), 1e-12) for kind, value in scores.items()}


# Scores of several head sets at once: [(loss, quality or None)] per set, in order (e.g. computed on Ray).
SetScores = Callable[[list[list[HeadSpec]], bool, Callable[[float], None] | None], list[tuple[float, float | None]]]


def ablation(scorer: Scorer, heads: list[HeadSpec] | None = None, with_quality: bool = True,
             progress: Callable[[float], None] | None = None, set_scores: SetScores | None = None) -> dict:
    """Loss and quality (BLEU or perplexity) of the whole model, and their change when each head alone is masked.
    Keys: "loss", the metric's key ("bleu", "perplexity"), "heads": spec → {"loss_change", "<key>_change"}.
    set_scores: score every head set in one call (corpus_jobs.ShardedScoring: on Ray, or in shards here) instead of
    one after another here."""
    heads = heads or all_heads(scorer.model)
    key = scorer.metric_key
    if set_scores is not None:
        (base_loss, base_quality), *scored = set_scores([[]] + [[spec] for spec in heads], with_quality, progress)
    else:
        base_loss = scorer.loss()
        base_quality = scorer.quality() if with_quality else None
        scored = []
        for done, spec in enumerate(heads, start=1):
            gates = head_mask([spec], scorer.model)
            scored.append((scorer.loss(gates), scorer.quality(gates) if with_quality else None))
            if progress:
                progress(done / len(heads))
    changes = {}
    for spec, (loss, quality) in zip(heads, scored):
        changes[str(spec)] = {"loss_change": loss - base_loss}
        if with_quality:
            changes[str(spec)][f"{key}_change"] = quality - base_quality
    return {"loss": base_loss, key: base_quality, "heads": changes}


def importance_report(scorer: Scorer, with_ablation: bool = True, corpus_name: str = "",
                      progress: Callable[[float], None] | None = None, roles: dict | None = None,
                      engine=None) -> dict:
    """JSON-ready: per head its gradient importance (raw and per-layer normalised) and ablation changes.
    engine: computes the gradient totals and the ablations elsewhere (corpus_jobs.ShardedScoring, on Ray); without
    it, everything runs here, in this process."""
    started = time.perf_counter()
    share = 0.25 if with_ablation else 1.0

    def stage(offset: float, weight: float):
        return None if progress is None else (lambda fraction: progress(offset + weight * fraction))

    if engine is None:
        gradient = gradient_importance(scorer, stage(0.0, share))
    else:
        totals, examples = engine.gradient_totals(stage(0.0, share))
        gradient = {kind: total / max(1, examples) for kind, total in totals.items()}
    gradient_seconds = time.perf_counter() - started
    normalised = layer_normalised(gradient)
    ablated = ablation(scorer, progress=stage(share, 1 - share),
                       set_scores=engine.set_scores if engine else None) if with_ablation else None
    key = scorer.metric_key
    heads = []
    for spec in all_heads(scorer.model):
        entry = {"kind": spec.kind, "layer": spec.layer, "head": spec.head, "spec": str(spec),
                 "roles": (roles or {}).get(str(spec), []),
                 "gradient_importance": float(f"{gradient[spec.kind][spec.layer, spec.head]:.6g}"),
                 "gradient_importance_normalised": round(float(normalised[spec.kind][spec.layer, spec.head]), 4)}
        if ablated:
            entry.update({k: round(v, 4) for k, v in ablated["heads"][str(spec)].items()})
        heads.append(entry)
    # "pairs" for translation corpora, as reports have always said; "examples" too, for every corpus
    report = {"heads": heads, "metric": scorer.metric,
              "corpus": {"name": corpus_name, "pairs": scorer.size, "examples": scorer.size},
              "gradient_seconds": round(gradient_seconds, 2), "seconds": round(time.perf_counter() - started, 2)}
    if ablated:
        report["unpruned"] = {"loss": round(ablated["loss"], 4), key: round(ablated[key], 2)}
        report["rank_correlation"] = {
            f"{measure}_vs_{change}": rounded(spearman([h[measure] for h in heads], [h[change] for h in heads]))
            for measure in ("gradient_importance", "gradient_importance_normalised")
            for change in ("loss_change", f"{key}_change")}
    return report


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties): does one score order heads like the other?
    None when it is undefined (a constant score: e.g. per-layer normalisation with one head per layer), so the
    JSON holds null, never NaN."""
    ranks = [pd.Series(values).rank().to_numpy() for values in (a, b)]
    if len(a) < 2 or ranks[0].std() == 0 or ranks[1].std() == 0:
        return None
    return float(np.corrcoef(*ranks)[0, 1])
