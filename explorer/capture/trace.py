"""Trace: everything the model did with one sentence, as numpy arrays, serialisable to .npz and JSON.

The output is decoded first (greedy or beam, with the head mask in force); then one teacher-forced pass over
the decoder's input (start token + output, or prompt + continuation) captures every hook point and gives each
step's distribution. Decoder position first_step_position + i is the step that chose output token i, so its
patterns are exactly those of the incremental decoding step (up to float rounding). For every family alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import torch

from explorer.capture.head_sets import HeadSpec, format_heads, head_mask
from explorer.capture.inputs import InputError, prepare_source
from explorer.capture.value_norms import norm_attention
from explorer.models.hooks import model_run
from explorer.models.interface import AttentionModel, Continues, Embeds, ExplorerModel, FillsMask, Generates, Translates
from explorer.models.vocabulary import ATTENTION_KINDS as KINDS
from explorer.models.vocabulary import PER_HEAD_VALUES, Kind, Side, attention_hook, stack_hook

DERIVED_VALUES = ("norm",)      # per head, computed from the captured ones: {kind}.norm (Kobayashi et al. 2020)


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
class HeadValues:
    """One attention kind's numbers for every layer and head: [layers, heads, query, key] for the weights (pattern),
    the scaled scores before the softmax and Kobayashi et al.'s norms ‖α·f(x)‖ (explorer/capture/value_norms.py);
    [layers, heads, positions, d_k] for q, k, v and z. A view may carry only some (a window: the weights)."""

    pattern: np.ndarray
    scores: np.ndarray | None = None
    q: np.ndarray | None = None
    k: np.ndarray | None = None
    v: np.ndarray | None = None
    z: np.ndarray | None = None
    norm: np.ndarray | None = None

    def value(self, name: str) -> np.ndarray:
        """One array by its name (a page's choice of weights or norms); KeyError when this view has none."""
        array = getattr(self, name, None) if name in VALUE_NAMES else None
        if array is None:
            raise KeyError(name)
        return array

    def arrays(self) -> dict[str, np.ndarray]:
        """name → array, those this view has."""
        return {name: array for name in VALUE_NAMES if (array := getattr(self, name)) is not None}


VALUE_NAMES = PER_HEAD_VALUES + DERIVED_VALUES


@dataclass
class Generated:
    """What a model wrote, a chosen token a step: a translation or a continuation. Step i was chosen at decoder
    position first_step_position + i: 0 for a translation (BOS), the prompt's last token for a continuation."""

    title: str                          # what the output is: "German", "Continuation" …
    text: str
    tokens: list[str]                   # each step's choice, the end token too when chosen before the step limit
    steps: list[StepDistribution]
    decoding: str = "greedy"            # or "beam N"
    first_step_position: int = 0


@dataclass
class ClassProbabilities:
    """An image classifier's answer: the class its class token chose, with the top classes' probabilities, and the
    image it read ([height, width] pixels 0 … 1; its tokens are patches)."""

    title: str                          # "Class"
    step: StepDistribution
    image: np.ndarray


@dataclass
class Embedding:
    """A model that reads the sentence and writes nothing (a sentence encoder, a masked language model): its output is
    a vector per position; the sentence's embedding (explorer/analyses/sentence/sentence_similarity.py) and a mask's
    predictions (explorer/capture/masked_words.py) are computed from them apart."""

    title: str                          # "Sentence embedding", "Predictions for [MASK]"


Output = Generated | ClassProbabilities | Embedding
OUTPUT_KINDS = {Generated: "generated", ClassProbabilities: "class probabilities", Embedding: "embedding"}


@dataclass
class Trace:
    text: str                       # the sentence fed to the model (cleaned up; recased if typed all-caps)
    source_ids: list[int]           # piece ids + EOS
    target_ids: list[int]           # BOS + output ids
    source_tokens: list[str]        # pieces + </s>
    target_tokens: list[str]        # <s> + output pieces: the decoder's input positions
    truncated: bool
    pruned: str                     # HeadSpec text of the masked heads, "" when none
    d_k: int
    attention: dict[Kind, HeadValues]   # the kinds the model has
    masks: dict[Kind, np.ndarray]   # [query, key] bool, True = may attend
    positional: dict[str, np.ndarray]   # "source"/"target" -> [positions, d_model]
    embeddings: dict[str, np.ndarray]   # "source"/"target" -> token embedding * sqrt(d), [positions, d_model]
    inputs: dict[str, np.ndarray]       # "source"/"target" -> embedding + PE as the model sums them
    output: Output                      # what the model made of it: words it wrote, a class, or nothing but vectors
    recased_from: str = ""              # the sentence as typed, when its casing was changed (inputs.sentence_case)

    # What every output has, whatever its type (a figure of steps reads them alike for a translation and an image).
    @property
    def output_title(self) -> str:
        return self.output.title

    @property
    def output_text(self) -> str:
        """The output as text: a translation, a continuation, a class ("" for a model that writes nothing)."""
        if isinstance(self.output, Generated):
            return self.output.text
        return self.steps[0].chosen if self.steps else ""

    @property
    def output_tokens(self) -> list[str]:
        """Each step's choice."""
        return [step.chosen for step in self.steps] if not isinstance(self.output, Generated) else self.output.tokens

    @property
    def steps(self) -> list[StepDistribution]:
        if isinstance(self.output, Generated):
            return self.output.steps
        return [self.output.step] if isinstance(self.output, ClassProbabilities) else []

    @property
    def decoding(self) -> str:
        """"greedy" or "beam N"; "the class token" for an image; "" for a model that writes nothing."""
        if isinstance(self.output, Generated):
            return self.output.decoding
        return "the class token" if isinstance(self.output, ClassProbabilities) else ""

    @property
    def first_step_position(self) -> int:
        return self.output.first_step_position if isinstance(self.output, Generated) else 0

    @property
    def image(self) -> np.ndarray | None:
        return self.output.image if isinstance(self.output, ClassProbabilities) else None

    @property
    def output_ids(self) -> list[int]:
        """The output's ids: the target after the decoder's prefix (BOS, a language token) or after the prompt."""
        return self.target_ids[self.first_step_position + 1:]

    def pattern(self, kind: str) -> np.ndarray:
        return self.attention[Kind(kind)].pattern

    def tokens(self, side: Side) -> list[str]:
        return self.source_tokens if side is Side.SOURCE else self.target_tokens

    def ids(self, side: Side) -> list[int]:
        return self.source_ids if side is Side.SOURCE else self.target_ids

    def query_tokens(self, kind: str) -> list[str]:
        return self.tokens(Kind(kind).query_side)

    def key_tokens(self, kind: str) -> list[str]:
        return self.tokens(Kind(kind).key_side)

    @property
    def step_kind(self) -> Kind:
        """The attention whose keys a decoding step looks at to choose its token: cross-attention when the model has
        it, else (a decoder-only model) the decoder's own self-attention over the text so far."""
        return Kind.CROSS if Kind.CROSS in self.attention else Kind.DECODER

    def key_ids(self, kind: str) -> list[int]:
        """The ids of the tokens `kind` looks at (an image's patches have none: the target's, empty)."""
        return self.ids(Kind(kind).key_side) or self.target_ids

    # -- serialisation ---------------------------------------------------------------------------
    def metadata(self) -> dict:
        return {"output_kind": OUTPUT_KINDS[type(self.output)],
                "text": self.text, "output_text": self.output_text, "source_ids": self.source_ids,
                "target_ids": self.target_ids, "source_tokens": self.source_tokens,
                "target_tokens": self.target_tokens, "output_tokens": self.output_tokens,
                "truncated": self.truncated, "decoding": self.decoding, "pruned": self.pruned, "d_k": self.d_k,
                "recased_from": self.recased_from, "first_step_position": self.first_step_position,
                "output_title": self.output_title,
                "steps": [vars(s) for s in self.steps]}

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"{kind}.{name}": value for kind, values in self.attention.items()
                  for name, value in values.arrays().items()}
        arrays.update({f"{kind}.mask": mask for kind, mask in self.masks.items()})
        if self.image is not None:
            arrays["source.image"] = self.image
        # both sides, or the one side an encoder-only or decoder-only model has; T5 adds no position to its input
        for name, values in (("positional_encoding", self.positional), ("embedding", self.embeddings),
                             ("input", self.inputs)):
            arrays.update({f"{side}.{name}": value for side, value in values.items()})
        return arrays

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        if path.suffix == ".npz":
            meta = np.array(json.dumps(self.metadata(), ensure_ascii=False))
            np.savez_compressed(path, metadata=meta, **self.arrays())  # type: ignore[arg-type]  # no array named allow_pickle
        elif path.suffix == ".json":
            document = dict(self.metadata(), arrays={k: np.round(v.astype(np.float64), 6).tolist()
                                                     if v.dtype != bool else v.tolist()
                                                     for k, v in self.arrays().items()})
            path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        else:
            raise InputError(f"{path}: the trace file must end in .npz or .json")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trace:
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
        def per_side(name: str) -> dict[str, np.ndarray]:
            return {side: arrays[f"{side}.{name}"] for side in ("source", "target") if f"{side}.{name}" in arrays}

        attention = {kind: HeadValues(**{name: arrays[f"{kind}.{name}"] for name in VALUE_NAMES
                                         if f"{kind}.{name}" in arrays})
                     for kind in kinds}
        return cls(**trace_fields(meta, arrays.get("source.image")), attention=attention,
                   masks={k: arrays[f"{k}.mask"] for k in kinds}, positional=per_side("positional_encoding"),
                   embeddings=per_side("embedding"), inputs=per_side("input"))


def trace_fields(meta: dict, image: np.ndarray | None) -> dict:
    """A saved trace's metadata → Trace's fields besides the arrays: its flat output keys made its Output again (a
    file saved before the types has no output_kind: an image's is its class, any other's what it generated)."""
    steps = [StepDistribution(**step) for step in meta.pop("steps")]
    title = meta.pop("output_title", "German")          # a trace saved before 2026-11-23, by a translator
    text = meta.pop("output_text", None) or meta.pop("translation", "")   # "translation": saved before 2026-11-23
    tokens, decoding = meta.pop("output_tokens"), meta.pop("decoding")
    first = meta.pop("first_step_position", 0)
    kind = meta.pop("output_kind", "class probabilities" if image is not None else "generated")
    meta.pop("translation", None)
    output: Output
    if kind == "class probabilities":
        assert image is not None, "a class's trace keeps its image"
        output = ClassProbabilities(title, steps[0], image)
    elif kind == "embedding":
        output = Embedding(title)
    else:
        output = Generated(title, text, tokens, steps, decoding, first)
    return dict(meta, output=output)


def step_distributions(log_probs: torch.Tensor, chosen: list[int], pieces: Callable[[list[int]], list[str]],
                       top_k: int) -> list[StepDistribution]:
    """Each step's chosen token and the top-k of its distribution; pieces turns ids into the tokenizer's pieces."""
    probs = log_probs.float().exp()
    entropy = -(probs * log_probs.float().clamp_min(-1e9)).sum(-1)
    top_probs, top_ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    steps = []
    for i, token in enumerate(chosen):
        ids = top_ids[i].tolist()
        steps.append(StepDistribution(pieces([token])[0], token, float(probs[i, token]),
                                      float(entropy[i]), ids, pieces(ids),
                                      [float(p) for p in top_probs[i]]))
    return steps


def decoded(model: ExplorerModel, source_ids: list[int], beam_size: int = 1, alpha: float = 0.6
            ) -> tuple[list[int], list[int]]:
    """(output ids, the tokens each step chose): the output, and its end token when the model chose one before
    the step limit (a model that does not generate gives nothing)."""
    if not isinstance(model, Generates):
        return [], []
    output = model.generate([source_ids], beam_size, alpha)[0][: model.max_positions - 1]
    if len(output) >= model.step_limit(len(source_ids)):
        return output, output
    assert model.end_id is not None                 # it stopped before the limit: it chose its end token
    return output, output + [model.end_id]


def captured_masks(cache, model: AttentionModel, attention: dict[Kind, HeadValues]) -> dict[Kind, np.ndarray]:
    """kind → [query, key] bool (True = may attend): as captured, or what no mask means for that kind."""
    masks = {}
    for kind in attention:
        queries, keys = attention[kind].pattern.shape[-2:]
        name = attention_hook(kind, 0, "mask")
        if name in cache:
            masks[kind] = cache[name][0, 0].expand(queries, keys).cpu().numpy().copy()
        else:   # no mask was passed: nothing hidden, except the future for a decoder
            full = torch.ones(queries, keys, dtype=torch.bool)
            masks[kind] = (full.tril(keys - queries) if Kind(kind).causal else full).cpu().numpy()
    return masks


def captured_attention(cache, model: AttentionModel, gates: Mapping[Kind, torch.Tensor]) -> dict[Kind, HeadValues]:
    """kind → the first row's [layers, heads, …] arrays, with Kobayashi et al.'s ‖α f(x)‖ beside the weights
    (computed with the same head gates)."""
    attention = {}
    for kind in model.kinds:
        values = HeadValues(**{value: cache.layers(kind, value)[0].float().cpu().numpy() for value in PER_HEAD_VALUES})
        gate = gates[kind].cpu().numpy() if kind in gates else None
        values.norm = norm_attention(model, kind, values.pattern, values.value("v"), gate)
        attention[Kind(kind)] = values
    return attention


def captured_stacks(cache) -> dict[str, dict[str, np.ndarray]]:
    """pos_encoding / embed / input → side ("source" for the encoder, "target" for the decoder) → [positions, d]."""
    stacks = {"source": "encoder", "target": "decoder"}
    return {value: {side: cache[stack_hook(stack, value)][0].float().cpu().numpy() for side, stack in stacks.items()
                    if stack_hook(stack, value) in cache}
            for value in ("pos_encoding", "embed", "input")}


@torch.no_grad()
def trace_sentence(model: ExplorerModel, text: str, beam_size: int = 1, pruned: list[HeadSpec] | None = None,
                   top_k: int = 10, alpha: float = 0.6, fix_casing: bool = False) -> Trace:
    """Translate (continue, or read) one sentence and capture every attention, mask, positional encoding and
    decoding step. fix_casing: an all-caps or all-lower-case sentence is fed in sentence case (Trace.recased_from
    keeps it)."""
    source = prepare_source(text, model, fix_casing)
    gates = head_mask(pruned or [], model)
    with model_run(head_mask=gates):
        output, chosen = decoded(model, source.ids, beam_size, alpha)
    target_ids: list[int] = []
    first = 0
    if model.has("decoder"):
        assert isinstance(model, Generates)         # a model with a decoder writes
        target_ids, first = model.decoder_input(source.ids, output)
    encoder = model.pad([source.ids]) if model.has("encoder") else None
    decoder = model.pad([target_ids]) if target_ids else None
    logits, cache = model.run_with_cache(encoder, decoder, "*", head_mask=gates)
    attention, stacked = captured_attention(cache, model, gates), captured_stacks(cache)
    steps = []
    if chosen:
        assert logits is not None                   # it chose tokens: forward read a target and gave its logits
        log_probs = torch.log_softmax(logits[0, first: first + len(chosen)].float(), -1)
        steps = step_distributions(log_probs, chosen, model.pieces, top_k)
    title = cast(Translates | Continues | FillsMask | Embeds, model).output_title      # it claims one of them
    written: Output = Embedding(title)
    if isinstance(model, Generates):
        written = Generated(title, model.detokenize(output), model.pieces(chosen), steps,
                            f"beam {beam_size}" if beam_size > 1 else "greedy", first)
    return Trace(
        text=source.text, source_ids=source.ids if encoder else [], target_ids=target_ids,
        source_tokens=source.pieces if encoder else [], target_tokens=model.pieces(target_ids),
        truncated=source.truncated, pruned=format_heads(pruned or []), d_k=model.d_k, attention=attention,
        masks=captured_masks(cache, model, attention), positional=stacked["pos_encoding"],
        embeddings=stacked["embed"], inputs=stacked["input"], output=written, recased_from=source.recased_from)
