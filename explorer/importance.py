"""Which heads matter, two ways, over a parallel corpus.

- Gradient (Michel et al. 2019): with a gate ξ_h = 1 on every head's output, importance I_h = E_x |∂L(x)/∂ξ_h|,
  the expectation over sentences x of the absolute gradient of that sentence's loss L(x) (mean teacher-forced
  cross-entropy over its target tokens). Taken per sentence, not per batch: a batch's gradient lets the signs
  of different sentences cancel, and ranks heads far worse against what masking them costs. Each sentence
  has its own gate, so one backward pass per batch gives every sentence's gradient. Gradients are taken
  with respect to the gates only (torch.autograd.grad), so the shared model's parameters are never touched:
  another session can use the model at the same time.
- Ablation: the change in loss and in BLEU when that head alone is masked.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from explorer.head_sets import HeadSpec, all_heads, head_mask
from explorer.parallel_corpus import ParallelCorpus, corpus_bleu, corpus_loss
from models.checkpoint import Checkpoint
from models.hooks import model_run
from models.tokenizer import PAD
from models.vocabulary import ATTENTION_KINDS as KINDS


def gradient_importance(checkpoint: Checkpoint, corpus: ParallelCorpus,
                        progress: Callable[[float], None] | None = None) -> dict[str, np.ndarray]:
    """kind -> [layers, heads]: mean over sentences of |∂L(sentence)/∂gate| (Michel et al. 2019)."""
    config = checkpoint.model.config
    totals = {kind: torch.zeros(config.layers(kind), config.heads) for kind in KINDS}
    batches, sentences = list(corpus.batches()), 0
    with torch.enable_grad():
        for done, (indices, (src, tgt_in, tgt_out)) in enumerate(batches, start=1):
            gates = {kind: torch.ones(config.layers(kind), len(indices), config.heads, requires_grad=True)
                     for kind in KINDS}
            with model_run(head_mask=gates):
                logits = checkpoint.model(src, tgt_in)
            token_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD,
                                         reduction="none").view(tgt_out.shape)
            sentence_loss = token_loss.sum(1) / (tgt_out != PAD).sum(1).clamp_min(1)
            # Sentences do not interact, so the gradient of the sum w.r.t. sentence b's gate is ∂L(b)/∂ξ.
            grads = torch.autograd.grad(sentence_loss.sum(), [gates[k] for k in KINDS])
            for kind, grad in zip(KINDS, grads):
                totals[kind] += grad.abs().sum(1)
            sentences += len(indices)
            if progress:
                progress(done / len(batches))
    return {kind: (totals[kind] / max(1, sentences)).numpy() for kind in KINDS}


def layer_normalised(scores: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each layer's importances divided by their L2 norm (Michel et al. normalise per layer)."""
    return {kind: value / np.maximum(np.linalg.norm(value, axis=1, keepdims=True), 1e-12) for kind, value in scores.items()}


def ablation(checkpoint: Checkpoint, corpus: ParallelCorpus, heads: list[HeadSpec] | None = None,
             with_bleu: bool = True, progress: Callable[[float], None] | None = None) -> dict:
    """Loss and BLEU of the whole model, and their change when each head alone is masked."""
    heads = heads or all_heads(checkpoint.model.config)
    base_loss = corpus_loss(checkpoint, corpus)
    base_bleu = corpus_bleu(checkpoint, corpus) if with_bleu else None
    changes = {}
    for done, spec in enumerate(heads, start=1):
        gates = head_mask([spec], checkpoint.model.config)
        change = {"loss_change": corpus_loss(checkpoint, corpus, gates) - base_loss}
        if with_bleu:
            change["bleu_change"] = corpus_bleu(checkpoint, corpus, gates) - base_bleu
        changes[str(spec)] = change
        if progress:
            progress(done / len(heads))
    return {"loss": base_loss, "bleu": base_bleu, "heads": changes}


def importance_report(checkpoint: Checkpoint, sources: list[str], references: list[str], with_ablation: bool = True,
                      corpus_name: str = "", progress: Callable[[float], None] | None = None,
                      roles: dict | None = None) -> dict:
    """JSON-ready: per head its gradient importance (raw and per-layer normalised) and ablation changes."""
    started = time.perf_counter()
    corpus = ParallelCorpus.build(checkpoint, sources, references)
    share = 0.25 if with_ablation else 1.0

    def stage(offset: float, weight: float):
        return None if progress is None else (lambda fraction: progress(offset + weight * fraction))

    gradient = gradient_importance(checkpoint, corpus, stage(0.0, share))
    gradient_seconds = time.perf_counter() - started
    normalised = layer_normalised(gradient)
    ablated = ablation(checkpoint, corpus, progress=stage(share, 1 - share)) if with_ablation else None
    heads = []
    for spec in all_heads(checkpoint.model.config):
        entry = {"kind": spec.kind, "layer": spec.layer, "head": spec.head, "spec": str(spec),
                 "roles": (roles or {}).get(str(spec), []),
                 "gradient_importance": round(float(gradient[spec.kind][spec.layer, spec.head]), 6),
                 "gradient_importance_normalised": round(float(normalised[spec.kind][spec.layer, spec.head]), 4)}
        if ablated:
            entry.update({k: round(v, 4) for k, v in ablated["heads"][str(spec)].items()})
        heads.append(entry)
    report = {"heads": heads, "corpus": {"name": corpus_name, "pairs": len(corpus.pairs)},
              "gradient_seconds": round(gradient_seconds, 2), "seconds": round(time.perf_counter() - started, 2)}
    if ablated:
        report["unpruned"] = {"loss": round(ablated["loss"], 4), "bleu": round(ablated["bleu"], 2)}
        report["rank_correlation"] = {
            f"{measure} vs {change}": rounded(spearman([h[measure] for h in heads], [h[change] for h in heads]))
            for measure in ("gradient_importance", "gradient_importance_normalised")
            for change in ("loss_change", "bleu_change")}
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
