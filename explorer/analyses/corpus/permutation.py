"""Permuted attention, after Jain & Wallace 2019 ("Attention is not Explanation", NAACL, §4.2): replace every head's
pattern by a random permutation of its own weights and see how much the output moves.

For one attention kind at a time, each query's row of every head is shuffled over the keys that query may attend to
(masked keys keep their zero, so each row still sums to 1 and keeps its multiset of weights), by a per-call pattern
hook (models/hooks.model_run) drawing from a seeded torch.Generator. The output compared is the model's own greedy
output (teacher-forced, so every step is compared on the same prefix), or for a masked language model the
distribution at its [MASK] (explorer/faithfulness.setup_for's choice of sentence and mask):
- total variation distance ½‖p − q‖₁ between the original and the permuted next-token distributions, per step;
- BLEU of the permuted model's own greedy output against the original output (100 = unchanged);
- beside it, leave-one-out's effect: the TV distance when the single source token whose blanking lowers the
  output's log-probability most (explorer/faithfulness.leave_one_out) is blanked.
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import median

import numpy as np
import torch

from explorer.analyses.sentence.faithfulness import (
    Setup,
    Unscorable,
    blank_id,
    greedy_outputs,
    leave_one_out,
    setup_for,
    widened,
)
from explorer.capture.forcing import IGNORED, forced_batch
from explorer.capture.inputs import InputError
from explorer.capture.translation import bleu
from explorer.models.hooks import Hook, model_run
from explorer.models.interface import Embeds, ExplorerModel
from explorer.models.vocabulary import Kind, attention_hook

# (pattern [batch, heads, query, key], allowed [same shape, bool]) → the pattern to use instead
Transform = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def permuted(pattern: torch.Tensor, allowed: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each row's weights on its allowed keys shuffled among those keys (an independent permutation per batch
    row, head and query); disallowed keys get 0. A row with no allowed key is left as it is."""
    keys = pattern.shape[-1]
    noise = torch.rand(pattern.shape, generator=generator).to(pattern.device)
    # allowed keys first, in random order (targets), and in their own order (sources): the first n of each pair
    # up; the rest pair disallowed keys with disallowed keys, which carry 0
    targets = noise.masked_fill(~allowed, 2.0).argsort(dim=-1)
    order = torch.arange(keys, device=pattern.device).expand(pattern.shape)
    sources = order.masked_fill(~allowed, keys).argsort(dim=-1)
    weights = (pattern * allowed).gather(-1, sources)
    shuffled = torch.zeros_like(pattern).scatter(-1, targets, weights)
    return torch.where(allowed.any(-1, keepdim=True), shuffled, pattern)


def uniform(pattern: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Every row uniform over its allowed keys: a pattern that permutation cannot change (a control)."""
    counts = allowed.sum(-1, keepdim=True).clamp_min(1)
    return (allowed / counts).to(pattern.dtype)


def pattern_hooks(model: ExplorerModel, kinds: list[str], transform: Transform) -> dict[str, Hook]:
    """Hooks that replace every layer's pattern of the given kinds by transform(pattern, allowed). `allowed` is
    the block's own mask, read by a hook on its mask point in the same call; where a call passes no mask, nothing
    is hidden but a decoder's future (explorer.capture.trace.captured_masks' rule)."""
    hooks: dict[str, Hook] = {}
    masks: dict[tuple[str, int], torch.Tensor] = {}
    for kind in kinds:
        for layer in range(model.layers(kind)):
            block = (kind, layer)

            def remember(mask: torch.Tensor, _: str, block=block) -> None:
                masks[block] = mask

            def replace(pattern: torch.Tensor, _: str, block=block, kind=kind) -> torch.Tensor:
                mask = masks.pop(block, None)
                if mask is None:
                    queries, keys = pattern.shape[-2:]
                    mask = torch.ones(queries, keys, dtype=torch.bool, device=pattern.device)
                    mask = mask.tril(keys - queries) if Kind(kind).causal else mask
                return transform(pattern, torch.broadcast_to(mask.bool(), pattern.shape))

            if attention_hook(kind, layer, "mask") in model.hook_names:
                hooks[attention_hook(kind, layer, "mask")] = remember
            hooks[attention_hook(kind, layer, "pattern")] = replace
    return hooks


def permuting(model: ExplorerModel, kinds: list[str], seed: int = 0) -> tuple[dict[str, Hook], torch.Generator]:
    """Hooks that permute every head's pattern of these kinds, and their generator (seeded: reproducible)."""
    generator = torch.Generator().manual_seed(seed)
    return pattern_hooks(model, kinds, lambda pattern, allowed: permuted(pattern, allowed, generator)), generator


@torch.no_grad()
def output_distributions(model: ExplorerModel, setup: Setup, rows: list[list[int]]) -> torch.Tensor:
    """[rows, steps, vocab]: the next-token distribution at each step of the setup's output, teacher-forced on
    each source row (a masked language model: at its masked positions)."""
    if not model.has("decoder"):
        logits = model.forward(model.pad(rows))[:, setup.positions]
    else:
        source, target, labels = forced_batch(model, [(row, setup.output_ids) for row in rows])
        logits = model.forward(source, target)[:, labels[0] != IGNORED]
    return torch.softmax(widened(logits), -1)


def total_variation(p: torch.Tensor, q: torch.Tensor) -> np.ndarray:
    """½ Σ|p − q| over the vocabulary, per step."""
    return (0.5 * (p - q).abs().sum(-1)).cpu().numpy()


def effect(per_sentence: list[np.ndarray], agreements: list[np.ndarray]) -> dict:
    """Means over every step, the median of the sentences' mean TV (the paper's statistic is a median), and how
    often the top token stays the same."""
    if not per_sentence:
        return {"tv_mean": None, "tv_median_sentence": None, "top1_agreement": None, "steps": 0}
    steps = np.concatenate(per_sentence)
    return {"tv_mean": round(float(steps.mean()), 4),
            "tv_median_sentence": round(float(median(float(values.mean()) for values in per_sentence)), 4),
            "top1_agreement": round(float(np.concatenate(agreements).mean()), 4), "steps": int(steps.size)}


def permutation_effect(model: ExplorerModel, sentences: list[str], seed: int = 0,
                       progress: Callable[[float], None] | None = None) -> dict:
    """Per attention kind: how far permuting its attention moves the output (TV per step, top-1 agreement, BLEU
    of the permuted greedy output against the original; BLEU None for a masked language model), and the same
    TV for blanking the most important source token by leave-one-out. Sentences that cannot be scored are
    counted by reason under "skipped"."""
    sentences = [text for text in sentences if text.strip()]
    kinds = list(model.kinds)
    outputs = greedy_outputs(model, sentences)
    hooks = {kind: permuting(model, [kind], seed)[0] for kind in kinds}
    permuted_outputs = {}
    if model.has("decoder"):            # the permuted model's own greedy outputs, batched as the original's
        for kind in kinds:
            with model_run(hooks=hooks[kind], hook_names=model.hook_names):
                permuted_outputs[kind] = greedy_outputs(model, sentences)
    tv = {kind: [] for kind in kinds + ["leave_one_out"]}
    agree = {kind: [] for kind in kinds + ["leave_one_out"]}
    skipped: dict[str, int] = {}
    for number, (text, output) in enumerate(zip(sentences, outputs), start=1):
        try:
            if isinstance(model, Embeds):
                raise Unscorable(f"{model.name} writes an embedding, not a distribution over tokens to compare",
                                 "its output is an embedding, not a distribution")
            setup = setup_for(model, text, fix_casing=False, output=output)
        except InputError as error:
            reason = getattr(error, "reason", str(error))
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        original = output_distributions(model, setup, [setup.source_ids])[0]
        for kind in kinds:
            with model_run(hooks=hooks[kind], hook_names=model.hook_names):
                changed = output_distributions(model, setup, [setup.source_ids])[0]
            tv[kind].append(total_variation(original, changed))
            agree[kind].append((original.argmax(-1) == changed.argmax(-1)).cpu().numpy())
        if setup.scored:                # leave-one-out's effect: blank its most important token
            top = setup.scored[int(np.argmax(leave_one_out(model, setup)))]
            blanked = list(setup.source_ids)
            blanked[top] = blank_id(model)
            changed = output_distributions(model, setup, [blanked])[0]
            tv["leave_one_out"].append(total_variation(original, changed))
            agree["leave_one_out"].append((original.argmax(-1) == changed.argmax(-1)).cpu().numpy())
        if progress:
            progress(number / len(sentences))
    result = {"sentences": len(sentences) - sum(skipped.values()), "seed": seed,
              "skipped": dict(sorted(skipped.items())), "kinds": {}}
    for kind in kinds:
        result["kinds"][kind] = effect(tv[kind], agree[kind])
        result["kinds"][kind]["bleu"] = None
        if model.has("decoder"):
            pairs = [(model.detokenize(new), model.detokenize(old))
                     for new, old in zip(permuted_outputs[kind], outputs) if new is not None and old is not None]
            result["kinds"][kind]["bleu"] = round(bleu(*map(list, zip(*pairs))), 2) if pairs else None
    result["leave_one_out"] = effect(tv["leave_one_out"], agree["leave_one_out"])
    return result
