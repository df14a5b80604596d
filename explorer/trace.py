"""Trace: everything the model did with one sentence, as numpy arrays, serialisable to .npz and JSON.

The translation is decoded first (greedy or beam, with the head mask in force); then one teacher-forced pass
over BOS + output captures every hook point. Decoder position i of that pass is the step that chose output
token i, so its patterns are exactly those of the incremental decoding step (up to float rounding).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from models.checkpoint import Checkpoint
from models.decoding import beam_search, greedy
from models.hooks import model_run
from models.tokenizer import BOS, EOS
from models.vocabulary import ATTENTION_KINDS as KINDS, PER_HEAD_VALUES, stack_hook
from explorer.head_sets import HeadSpec, format_heads, head_mask
from explorer.inputs import prepare_source


@dataclass
class StepDistribution:
    """One decoding step: the chosen token and the top-k of the distribution it was chosen from."""

    chosen: str
    chosen_id: int
    chosen_prob: float
    entropy: float                  # nats
    top_ids: list[int]
    top_tokens: list[str]
    top_probs: list[float]


@dataclass
class Trace:
    text: str                       # the sentence fed to the model (cleaned up; recased if typed all-caps)
    translation: str
    source_ids: list[int]           # piece ids + EOS
    target_ids: list[int]           # BOS + output ids
    source_tokens: list[str]        # pieces + </s>
    target_tokens: list[str]        # <s> + output pieces: the decoder's input positions
    output_tokens: list[str]        # output pieces + </s> (absent when cut at the step limit): each step's choice
    truncated: bool
    decoding: str                   # "greedy" or "beam N"
    pruned: str                     # HeadSpec text of the masked heads, "" when none
    d_k: int
    # kind -> [layers, heads, query, key] (pattern, scores) or [layers, heads, positions, d_k] (q, k, v, z)
    attention: dict[str, dict[str, np.ndarray]]
    masks: dict[str, np.ndarray]    # kind -> [query, key] bool, True = may attend
    positional: dict[str, np.ndarray]   # "source"/"target" -> [positions, d_model]
    embeddings: dict[str, np.ndarray]   # "source"/"target" -> token embedding * sqrt(d), [positions, d_model]
    inputs: dict[str, np.ndarray]       # "source"/"target" -> embedding + PE as the model sums them
    steps: list[StepDistribution] = field(default_factory=list)
    recased_from: str = ""              # the sentence as typed, when its casing was changed (inputs.sentence_case)
    # The decoder position whose output chose step 0: 0 for a translation (BOS), the prompt's last token for a
    # decoder-only model's continuation.
    first_step_position: int = 0

    @property
    def output_ids(self) -> list[int]:
        """The translation's piece ids (target_ids without the BOS the decoder starts from)."""
        return self.target_ids[1:]

    def pattern(self, kind: str) -> np.ndarray:
        return self.attention[kind]["pattern"]

    def query_tokens(self, kind: str) -> list[str]:
        return self.source_tokens if kind == "encoder" else self.target_tokens

    def key_tokens(self, kind: str) -> list[str]:
        return self.target_tokens if kind == "decoder" else self.source_tokens

    # -- serialisation ---------------------------------------------------------------------------
    def metadata(self) -> dict:
        return {"text": self.text, "translation": self.translation, "source_ids": self.source_ids,
                "target_ids": self.target_ids, "source_tokens": self.source_tokens,
                "target_tokens": self.target_tokens, "output_tokens": self.output_tokens,
                "truncated": self.truncated, "decoding": self.decoding, "pruned": self.pruned, "d_k": self.d_k,
                "recased_from": self.recased_from, "first_step_position": self.first_step_position,
                "steps": [vars(s) for s in self.steps]}

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"{kind}.{name}": value for kind, values in self.attention.items() for name, value in values.items()}
        arrays.update({f"{kind}.mask": mask for kind, mask in self.masks.items()})
        for side in self.positional:          # both sides, or the one side an encoder-only or decoder-only model has
            arrays[f"{side}.positional_encoding"] = self.positional[side]
            arrays[f"{side}.embedding"] = self.embeddings[side]
            arrays[f"{side}.input"] = self.inputs[side]
        return arrays

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        if path.suffix == ".npz":
            np.savez_compressed(path, metadata=np.array(json.dumps(self.metadata(), ensure_ascii=False)), **self.arrays())
        elif path.suffix == ".json":
            document = dict(self.metadata(), arrays={k: np.round(v.astype(np.float64), 6).tolist()
                                                     if v.dtype != bool else v.tolist()
                                                     for k, v in self.arrays().items()})
            path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        else:
            raise ValueError(f"{path}: the trace file must end in .npz or .json")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        """Read a trace written by save(), .npz or .json (JSON numbers come back as float32, rounded to 1e-6)."""
        path = Path(path)
        if path.suffix == ".json":
            meta = json.loads(path.read_text(encoding="utf-8"))
            arrays = {k: np.array(v) for k, v in meta.pop("arrays").items()}
            arrays = {k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in arrays.items()}
        else:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["metadata"]))
                arrays = {k: data[k] for k in data.files if k != "metadata"}
        kinds = [kind for kind in KINDS if f"{kind}.pattern" in arrays]      # the kinds the model has
        sides = [side for side in ("source", "target") if f"{side}.input" in arrays]
        attention = {kind: {name: arrays[f"{kind}.{name}"] for name in PER_HEAD_VALUES if f"{kind}.{name}" in arrays}
                     for kind in kinds}
        steps = [StepDistribution(**s) for s in meta.pop("steps")]
        return cls(**meta, attention=attention, masks={k: arrays[f"{k}.mask"] for k in kinds},
                   positional={s: arrays[f"{s}.positional_encoding"] for s in sides},
                   embeddings={s: arrays[f"{s}.embedding"] for s in sides},
                   inputs={s: arrays[f"{s}.input"] for s in sides}, steps=steps)


def step_distributions(log_probs: torch.Tensor, chosen: list[int], pieces: Callable[[list[int]], list[str]],
                       top_k: int) -> list[StepDistribution]:
    """Each step's chosen token and the top-k of its distribution; pieces turns ids into the tokenizer's pieces."""
    probs = log_probs.float().exp()
    entropy = -(probs * log_probs.float().clamp_min(-1e9)).sum(-1)
    top_probs, top_ids = probs.topk(top_k, dim=-1)
    steps = []
    for i, token in enumerate(chosen):
        ids = top_ids[i].tolist()
        steps.append(StepDistribution(pieces([token])[0], token, float(probs[i, token]),
                                      float(entropy[i]), ids, pieces(ids),
                                      [float(p) for p in top_probs[i]]))
    return steps


@torch.no_grad()
def trace_sentence(checkpoint: Checkpoint, text: str, beam_size: int = 1, pruned: list[HeadSpec] | None = None,
                   top_k: int = 10, alpha: float = 0.6, fix_casing: bool = True) -> Trace:
    """Translate one sentence and capture every attention, mask, positional encoding and decoding step.
    fix_casing: an all-caps or all-lower-case sentence is fed in sentence case (Trace.recased_from keeps it)."""
    model, tokenizer = checkpoint.model, checkpoint.tokenizer
    source = prepare_source(text, tokenizer, model.config.max_len, fix_casing)
    gates = head_mask(pruned or [], model.config)
    src = torch.tensor([source.ids])
    with model_run(head_mask=gates):
        if beam_size > 1:
            result = beam_search(model, src, beam_size, alpha)
            output, log_probs = result.best.tokens, result.best_log_probs
        else:
            result = greedy(model, src, keep_distributions=True)
            output, log_probs = result.tokens[0], result.log_probs[0]
    output = output[: model.config.max_len - 1]
    chosen = (output + [EOS])[: log_probs.shape[0]]
    tgt = torch.tensor([[BOS] + output])

    _, cache = model.run_with_cache(src, tgt, "*", head_mask=gates)
    attention = {kind: {value: cache.layers(kind, value)[0].float().numpy() for value in PER_HEAD_VALUES}
                 for kind in KINDS}
    masks = {kind: cache.attention(kind, 0, "mask")[0, 0].expand(
        attention[kind]["pattern"].shape[-2:]).numpy().copy() for kind in KINDS}
    sides = {"source": "encoder", "target": "decoder"}
    return Trace(
        text=source.text, translation=tokenizer.decode(output), source_ids=source.ids, target_ids=[BOS] + output,
        source_tokens=source.pieces,
        target_tokens=tokenizer.pieces([BOS] + output), output_tokens=tokenizer.pieces(chosen),
        truncated=source.truncated, decoding=f"beam {beam_size}" if beam_size > 1 else "greedy",
        pruned=format_heads(pruned or []), d_k=model.config.d_k, attention=attention, masks=masks,
        positional={s: cache[stack_hook(stack, "pos_encoding")][0].numpy() for s, stack in sides.items()},
        embeddings={s: cache[stack_hook(stack, "embed")][0].numpy() for s, stack in sides.items()},
        inputs={s: cache[stack_hook(stack, "input")][0].numpy() for s, stack in sides.items()},
        steps=step_distributions(log_probs, chosen, tokenizer.pieces, top_k), recased_from=source.recased_from,
    )
