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

import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from cachetools import LRUCache

from explorer.analyses.sentence.faithfulness import with_end_token
from explorer.capture.forcing import IGNORED, forced_batch
from explorer.capture.inputs import InputError, prepare_source
from explorer.models.hooks import ActivationCache, Hook, in_plain_call, matching_names, model_run
from explorer.models.interface import Batch, Embeds, ExplorerModel, Generates
from explorer.models.vocabulary import ATTENTION_KINDS, Kind, Side, attention_hook

Hooks = Mapping[str, Hook] | Iterable[tuple[str, Hook]]


Inputs = str | Sequence[str] | torch.Tensor | Sequence[Sequence[int]]
Targets = str | Sequence[str] | torch.Tensor | Sequence[Sequence[int]] | None
# (id of the model, source ids) → (a weak reference to that model, its greedy output): decoded once. The reference
# tells a live model from a freed one whose id was reused.
GREEDY_OUTPUTS: LRUCache = LRUCache(maxsize=256)


@dataclass
class ReadInputs:
    """A batch as the model reads it: the padded source and target (None where the model has no such stack),
    each row's pieces, and the target positions that predict each row's output tokens."""
    encoder: Batch | None
    decoder: Batch | None
    source_pieces: list[list[str]]
    target_pieces: list[list[str]]
    output_positions: list[list[int]]
    output_ids: list[list[int]]


def id_rows(ids, what: str) -> list[list[int]]:
    """Token ids as rows: a LongTensor [batch, positions] (or [positions]) or lists of ints."""
    if isinstance(ids, torch.Tensor):
        if ids.dtype not in (torch.long, torch.int, torch.int32) or ids.dim() not in (1, 2):
            raise InputError(f"{what}: token ids are a LongTensor [batch, positions]; this one is {ids.dtype} "
                             f"{tuple(ids.shape)}")
        return (ids[None] if ids.dim() == 1 else ids).tolist()
    rows = [list(row) for row in ids]
    if not rows or not all(row and all(isinstance(i, int) for i in row) for row in rows):
        raise InputError(f"{what}: give a string, a list of strings, or token ids (a LongTensor [batch, positions])")
    return rows


def source_rows(model: ExplorerModel, inputs: Inputs, recase: bool) -> tuple[list[list[int]], bool]:
    """(each row's source ids, whether the input was a batch); text is read as typed unless recase."""
    if isinstance(inputs, str):
        return [prepare_source(inputs, model, fix_casing=recase).ids], False
    if isinstance(inputs, Sequence) and inputs and all(isinstance(text, str) for text in inputs):
        return [prepare_source(text, model, fix_casing=recase).ids for text in inputs], True
    rows = id_rows(inputs, "inputs")
    if any(i < 0 for row in rows for i in row):
        raise InputError("inputs: token ids are 0 or more")
    return rows, True


def own_outputs(model: ExplorerModel, sources: list[list[int]]) -> list[list[int]]:
    """Each source's greedy output with its end token when it ended (as patching scores it), decoded once per
    model and source and remembered, so that a run per hook does not decode again (only outside a pruning or
    hooked block, whose output would be another)."""
    plain = in_plain_call()
    keys = [(id(model), tuple(ids)) for ids in sources]

    def remembered(key) -> list[int] | None:
        found = GREEDY_OUTPUTS.get(key) if plain else None
        return found[1] if found is not None and found[0]() is model else None
    outputs = [remembered(key) for key in keys]
    missing = [i for i, output in enumerate(outputs) if output is None]
    if missing:
        with torch.no_grad():
            decoded = model.generate([sources[i] for i in missing])
        for i, output in zip(missing, decoded):
            outputs[i] = with_end_token(model, sources[i], list(output))
            if plain:
                GREEDY_OUTPUTS[keys[i]] = (weakref.ref(model), outputs[i])
    return outputs


def read_inputs(model: ExplorerModel, inputs: Inputs, target: Targets = None, recase: bool = False
                ) -> tuple[ReadInputs, bool]:
    """The batch a run reads, and whether the inputs were a batch (a list or token ids) rather than one string."""
    sources, batched = source_rows(model, inputs, recase)
    if not isinstance(model, Generates) or not model.has("decoder"):
        pieces = [model.pieces(ids) for ids in sources]
        return ReadInputs(model.pad(sources), None, pieces, [[] for _ in sources], [[] for _ in sources],
                          [[] for _ in sources]), batched
    if target is None:
        outputs = own_outputs(model, sources)
    elif isinstance(target, str):
        outputs = [list(model.encode_reference(target))] * len(sources)         # with its end token
    elif isinstance(target, Sequence) and target and all(isinstance(text, str) for text in target):
        outputs = [list(model.encode_reference(text)) for text in target]
    else:
        outputs = id_rows(target, "target")
    if len(outputs) != len(sources):
        raise InputError(f"target: {len(outputs)} outputs for {len(sources)} inputs; give one for each, or one "
                         "string for all")
    encoder, decoder, labels = forced_batch(model, list(zip(sources, outputs)))
    positions = [(row != IGNORED).nonzero()[:, 0].tolist() for row in labels]
    source_pieces = [model.pieces(ids) for ids in sources] if encoder is not None else [[] for _ in sources]
    target_pieces = [model.pieces(row[present].tolist()) for row, present in zip(decoder.ids, decoder.present)]
    return ReadInputs(encoder, decoder, source_pieces, target_pieces, positions, outputs), batched


@dataclass
class HookedRun:
    """What one hooked run gave: the logits (the decoder's, or a masked language model's encoder's; None for a
    sentence encoder, whose .embedding is set), the captured values (after the hooks ran), the pieces it read,
    and the positions the output is predicted at. For one string every field is that sentence's (logits
    [positions, vocab]); for a batch (a list of strings, or token ids) logits are [batch, positions, vocab] and
    each per-sentence field is a list with a row per sentence."""
    logits: torch.Tensor | None
    cache: ActivationCache
    source_tokens: list
    target_tokens: list
    output_positions: list = field(default_factory=list)   # logits rows that predict the output tokens
    output_ids: list = field(default_factory=list)
    embedding: torch.Tensor | None = None
    batched: bool = False

    def output_log_prob(self) -> float | list[float]:
        """The total log-probability of the output tokens, each at the position that predicts it (one per row for
        a batch)."""
        if self.logits is None or not self.output_ids:
            raise InputError("this run has no output tokens to score (a sentence encoder, or no output)")
        if not self.batched:
            return row_log_prob(self.logits, self.output_positions, self.output_ids)
        return [row_log_prob(*row) for row in zip(self.logits, self.output_positions, self.output_ids)]


def row_log_prob(logits: torch.Tensor, positions: list[int], ids: list[int]) -> float:
    log_probs = torch.log_softmax(logits[positions].double(), -1)
    return float(log_probs[range(len(ids)), ids].sum())


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


def run_with_hooks(model: ExplorerModel, inputs: Inputs, hooks: Hooks = (), target: Targets = None,
                   names: str | list[str] = (), head_mask: dict | None = None, grad: bool = False,
                   recase: bool = False) -> HookedRun:
    """One teacher-forced run of `inputs` (a string, a list of strings as a padded batch, or token ids) with
    `hooks` ([(name or pattern, fn)] or {name: fn}); the values matching `names` (glob patterns) are returned in
    .cache as the run saw them, after the hooks. grad: keep the graph (the cache's values are in it)."""
    texts = isinstance(inputs, str) or (isinstance(inputs, Sequence) and all(isinstance(text, str) for text in inputs))
    if texts:
        return hooked_run(model, inputs, hooks, target, names, head_mask, grad, recase)
    try:                            # token ids: the embedding's lookup is what knows the vocabulary's size
        return hooked_run(model, inputs, hooks, target, names, head_mask, grad, recase)
    except IndexError:
        raise InputError(f"inputs: a token id is outside {model.name}'s vocabulary") from None


def hooked_run(model: ExplorerModel, inputs: Inputs, hooks: Hooks, target: Targets, names: str | list[str],
               head_mask: dict | None, grad: bool, recase: bool) -> HookedRun:
    read, batched = read_inputs(model, inputs, target, recase)
    captured = ActivationCache()

    def record(value: torch.Tensor, name: str) -> None:
        captured[name] = value if grad else value.detach()

    wanted = hooks_by_name(model, hooks)
    for name in (matching_names(model.hook_names, names) if names else []):
        wanted.setdefault(name, []).append(record)          # after the person's hooks: what the run went on with
    with torch.set_grad_enabled(grad), model_run(wanted, head_mask=head_mask, hook_names=model.hook_names):
        if isinstance(model, Embeds):
            embedding = model.embed(read.encoder)
            return HookedRun(None, captured, read.source_pieces if batched else read.source_pieces[0], [],
                             embedding=embedding if batched else embedding[0], batched=batched)
        logits = model.forward(read.encoder, read.decoder)
    if batched:
        return HookedRun(logits, captured, read.source_pieces, read.target_pieces, read.output_positions,
                         read.output_ids, batched=True)
    return HookedRun(logits[0], captured, read.source_pieces[0], read.target_pieces[0], read.output_positions[0],
                     read.output_ids[0])


def run_with_cache(model: ExplorerModel, inputs: Inputs, names: str | list[str] = "*", grad: bool = False,
                   target: Targets = None, hooks: Hooks = (), recase: bool = False
                   ) -> tuple[torch.Tensor | None, ActivationCache]:
    """(logits [batch, positions, vocab], cache) of one teacher-forced run, as TransformerLens's run_with_cache: the
    cache holds every value matching `names` with its batch axis, read by name or by shorthand
    (cache["pattern", 0], cache["pattern", 0, "cross"], cache["resid_post", 2, "encoder"]). A sentence encoder
    gives its embeddings [batch, d_model] in place of logits."""
    run = run_with_hooks(model, inputs, hooks, target, names, grad=grad, recase=recase)
    if run.logits is None:
        return (run.embedding if run.batched else run.embedding[None]), run.cache
    return (run.logits if run.batched else run.logits[None]), run.cache


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
