"""Interventions for researchers, in the style of TransformerLens's `run_with_hooks`: run the model once on a
sentence with hooks that read or replace any named value, and the usual hooks ready-made (ablate a head, patch a
head from another run), at every position or at chosen ones. Per-position activation patching is built on them.

Every value has a name (model.hook_names, e.g. "encoder.layers.0.self_attn.z"; models/vocabulary.py spells them):
  - attention blocks, `{stack}.layers.{L}.{self_attn|cross_attn}.{value}` with value one of q, k, v [batch, heads,
    positions, d_k]; scores, mask, pattern [batch, heads, queries, keys]; z [batch, heads, queries, d_k] (each
    head's output before W_O); out [batch, positions, d_model];
  - a stack's embed, pos_encoding, input [batch, positions, d_model], and each layer's output (the residual stream
    after the layer).
A hook is `fn(value, name)`: it returns a tensor to replace the value, or None to leave it (a reader). Hooks live
in this call only (models/hooks.py: a context variable), so a notebook's hook never reaches another run or another
session of the app.

The run is one teacher-forced forward pass: the decoder reads `target` (its text; default the model's own greedy
output for the unhooked sentence), so every position of every value exists at once and a hook sees it whole."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.analyses.sentence.faithfulness import with_end_token
from explorer.capture.forcing import IGNORED, forced_batch
from explorer.capture.inputs import InputError, prepare_source
from explorer.models.hooks import ActivationCache, Hook, matching_names, model_run
from explorer.models.interface import Embeds, ExplorerModel
from explorer.models.vocabulary import ATTENTION_KINDS, Kind, Side, attention_hook

Hooks = Mapping[str, Hook] | Iterable[tuple[str, Hook]]


@dataclass
class HookedRun:
    """What one hooked run gave: the logits [positions, vocab] (the decoder's, or a masked language model's
    encoder's; None for a sentence encoder, whose .embedding is set), the captured values (after the hooks ran),
    the pieces it read, and the positions the output is predicted at."""
    logits: torch.Tensor | None
    cache: ActivationCache
    source_tokens: list[str]
    target_tokens: list[str]
    output_positions: list[int] = field(default_factory=list)   # logits rows that predict the output tokens
    output_ids: list[int] = field(default_factory=list)
    embedding: torch.Tensor | None = None

    def output_log_prob(self) -> float:
        """The total log-probability of the output tokens, each at the position that predicts it."""
        if self.logits is None or not self.output_ids:
            raise InputError("this run has no output tokens to score (a sentence encoder, or no output)")
        log_probs = torch.log_softmax(self.logits[self.output_positions].double(), -1)
        return float(log_probs[range(len(self.output_ids)), self.output_ids].sum())


def hook_names(model: ExplorerModel, pattern: str = "*") -> list[str]:
    """The names of the model's values matching a glob pattern ("*.cross_attn.pattern"), in forward order."""
    return matching_names(model.hook_names, pattern)


def hooks_by_name(model: ExplorerModel, hooks: Hooks) -> dict[str, list[Hook]]:
    """(name or glob pattern, hook) pairs as {name: [hooks]}; a pattern that names no value raises HookNameError."""
    pairs = hooks.items() if isinstance(hooks, Mapping) else hooks
    by_name: dict[str, list[Hook]] = {}
    for pattern, hook in pairs:
        if not callable(hook):
            raise InputError(f"the hook for {pattern!r} is not a function: hooks are fn(value, name) → tensor or "
                             "None")
        for name in matching_names(model.hook_names, pattern):
            by_name.setdefault(name, []).append(hook)
    return by_name


def run_with_hooks(model: ExplorerModel, sentence: str, hooks: Hooks = (), target: str | None = None,
                   names: str | list[str] = (), head_mask: dict | None = None) -> HookedRun:
    """One teacher-forced run of `sentence` with `hooks` ([(name or pattern, fn)] or {name: fn}); the values
    matching `names` (glob patterns) are returned in .cache as the run saw them, after the hooks."""
    source = prepare_source(sentence, model)
    output_ids: list[int] = []
    if model.has("decoder"):
        if target is None:          # the model's own output, with its end token when it ended (as patching scores it)
            with torch.no_grad():
                output_ids = with_end_token(model, source.ids, list(model.generate([source.ids])[0]))
        else:
            output_ids = list(model.encode_reference(target))      # with its end token
        encoder, decoder, labels = forced_batch(model, [(source.ids, output_ids)])
        positions = (labels[0] != IGNORED).nonzero()[:, 0].tolist()
    else:
        encoder, decoder, positions = model.pad([source.ids]), None, []
    captured = ActivationCache()

    def record(value: torch.Tensor, name: str) -> None:
        captured[name] = value.detach()

    wanted = hooks_by_name(model, hooks)
    for name in (matching_names(model.hook_names, names) if names else []):
        wanted.setdefault(name, []).append(record)          # after the person's hooks: what the run went on with
    with torch.no_grad(), model_run(wanted, head_mask=head_mask, hook_names=model.hook_names):
        if isinstance(model, Embeds):
            embedding = model.embed(encoder)[0]
            return HookedRun(None, captured, source.pieces, [], embedding=embedding)
        logits = model.forward(encoder, decoder)[0]
    return HookedRun(logits, captured, source.pieces if encoder is not None else [],
                     model.pieces(decoder.ids[0].tolist()) if decoder is not None else [], positions, output_ids)


def head_value(kind: str, layer: int, value: str = "z") -> str:
    """The name of one attention block's value, e.g. head_value("cross", 2) → "decoder.layers.2.cross_attn.z"."""
    if kind not in ATTENTION_KINDS:
        raise InputError(f"attention kind {kind!r}: expected one of {', '.join(ATTENTION_KINDS)}")
    return attention_hook(kind, layer, value)


def selected(positions: int | Iterable[int] | None) -> slice | list[int]:
    if positions is None:
        return slice(None)
    return [positions] if isinstance(positions, int) else list(positions)


def ablate_head(kind: str, layer: int, head: int, positions: int | Iterable[int] | None = None
                ) -> tuple[str, Hook]:
    """A (name, hook) pair that zeroes one head's z at the query `positions` (default every one): the head's
    contribution removed there, as pruning removes it everywhere."""
    where = selected(positions)

    def ablate(value: torch.Tensor, _: str) -> torch.Tensor:
        value = value.clone()
        value[:, head, where] = 0
        return value
    return head_value(kind, layer), ablate


def patch_head(kind: str, layer: int, head: int, clean: torch.Tensor,
               positions: int | Iterable[int] | None = None) -> tuple[str, Hook]:
    """A (name, hook) pair that puts another run's z of one head (clean: that run's captured z, [1, heads,
    queries, d_k], e.g. run_with_hooks(..., names=head_value(kind, layer)).cache[name]) at the query `positions`
    (default every one)."""
    where = selected(positions)

    def patch(value: torch.Tensor, _: str) -> torch.Tensor:
        if clean.shape[1:] != value.shape[1:]:
            raise InputError(f"the patched value has shape {tuple(clean.shape)}, this run's {tuple(value.shape)}: "
                             "the two runs must read as many pieces")
        value = value.clone()
        value[:, head, where] = clean[:, head, where].to(value.dtype)
        return value
    return head_value(kind, layer), patch


@dataclass
class PositionPatching:
    """Per query position, the share of the clean output's log-probability that one head's z restores when
    patched from the clean run into the corrupted one at that position alone (1: all of it, 0: nothing)."""
    head: str
    query_tokens: list[str]
    restored: np.ndarray                # [queries]
    whole_head: float                   # the head patched at every position at once
    lp_clean: float
    lp_corrupt: float


def patch_positions(model: ExplorerModel, clean: str, corrupt: str, kind: str, layer: int, head: int,
                    metric: str = "total") -> PositionPatching:
    """Activation patching of one head at one query position at a time (Meng et al. 2022;
    explorer/analyses/sentence/patching.py patches a head at every position at once): the corrupted sentence run with the
    head's z taken from the clean run at position i only, for each i, one batch row each, and a last row with it
    patched everywhere. Scored as explorer.patch scores (the clean output teacher forced, a masked position, or
    a sentence encoder's embedding); the sentences must have as many pieces."""
    from explorer.analyses.sentence.patching import LOGIT_BUDGET, METRICS, Scorer, same_length_sources

    if metric not in METRICS:
        raise InputError(f"metric {metric!r}: expected one of {', '.join(METRICS)}")
    name = head_value(kind, layer)
    if name not in model.hook_names:
        raise InputError(f"{model.name} has no {kind} attention layer {layer}")
    if not 0 <= head < model.heads:
        raise InputError(f"head {head}: {model.name} has heads 0–{model.heads - 1}")
    clean_source, corrupt_source = same_length_sources(model, clean, corrupt)
    scorer = Scorer(model, clean_source.ids, corrupt_source.ids, metric)
    with torch.no_grad():
        _, values = model.run_with_cache(*scorer.row(0), names=[name])
        lp_clean = float(scorer.log_probs(scorer.outputs(*scorer.row(0)))[0])
        lp_corrupt = float(scorer.log_probs(scorer.outputs(*scorer.row(1)))[0])
    clean_value = values[name]
    queries = clean_value.shape[2]
    rows: list[int | None] = list(range(queries)) + [None]          # one position each, then every position
    chunk = max(1, LOGIT_BUDGET // max(1, scorer.outputs(*scorer.row(1))[0].numel()))
    lps = []
    for start in range(0, len(rows), chunk):
        part = rows[start: start + chunk]

        def patch_each_row(value: torch.Tensor, _: str, part=part) -> torch.Tensor:
            value = value.clone()
            for row, position in enumerate(part):
                where = slice(None) if position is None else position
                value[row, head, where] = clean_value[0, head, where].to(value.dtype)
            return value
        with torch.no_grad(), model_run({name: patch_each_row}, hook_names=model.hook_names):
            lps.append(scorer.log_probs(scorer.outputs(*scorer.repeated(1, len(part)))))
    spread = lp_clean - lp_corrupt
    shares = (torch.cat(lps).cpu().numpy() - lp_corrupt) / spread if abs(spread) > 1e-4 else np.full(len(rows), np.nan)
    tokens = clean_source.pieces if Kind(kind).query_side is Side.SOURCE else model.pieces(
        scorer.inputs[1].ids[0].tolist() if scorer.inputs[1] is not None else clean_source.ids)
    return PositionPatching(f"{kind}.{layer}.{head}", tokens[:queries], shares[:-1], float(shares[-1]),
                            lp_clean, lp_corrupt)
