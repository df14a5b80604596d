"""Hugging Face models (Marian, BART/mBART, BERT/RoBERTa, GPT-2) with the explorer's hook points and head masks.

Attention is captured from the model's own computation: the model is loaded with an attention function of
ours, registered through transformers' attention interface, which every attention block of these families
calls with its q, k, v, mask and scaling. It computes exactly what transformers' eager attention computes,
passing each value through the same per-call hooks as our own models (models/hooks.py) under the same names
(`encoder.layers.L.self_attn.pattern`, `decoder.layers.L.cross_attn.z`, …), and gates each head's z before the
output projection when the current call has a head mask. Nothing per call is stored on the shared model, so
concurrent sessions with different heads pruned get their own results.

Loading is safe: weights come from safetensors only, a folder with only pickle weights (pytorch_model.bin) is
refused, and nothing is downloaded (`local_files_only`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from models.checkpoint import CheckpointError
from models.hooks import ActivationCache, apply_hooks, capture, current_head_gate, is_hooked
from models.vocabulary import attention_hook, stack_hook

ATTENTION_NAME = "attention_explorer"
# model_type → (transformers class name, kinds of attention it has)
FAMILIES = {
    "marian": ("MarianMTModel", ("encoder", "decoder", "cross")),
    "bart": ("BartForConditionalGeneration", ("encoder", "decoder", "cross")),
    "mbart": ("MBartForConditionalGeneration", ("encoder", "decoder", "cross")),
    "bert": ("BertForMaskedLM", ("encoder",)),
    "roberta": ("RobertaForMaskedLM", ("encoder",)),
    "gpt2": ("GPT2LMHeadModel", ("decoder",)),
}
# Module paths of attention blocks, per family layout: (pattern, kind). The layer is the first number.
BLOCK_PATHS = (
    (re.compile(r"(?:^|\.)encoder\.layers\.(\d+)\.self_attn$"), "encoder"),        # Marian, BART
    (re.compile(r"(?:^|\.)decoder\.layers\.(\d+)\.self_attn$"), "decoder"),
    (re.compile(r"(?:^|\.)decoder\.layers\.(\d+)\.encoder_attn$"), "cross"),
    (re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.attention\.self$"), "encoder"),     # BERT, RoBERTa
    (re.compile(r"(?:^|\.)h\.(\d+)\.attn$"), "decoder"),                           # GPT-2
)
PICKLE_WEIGHTS = ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index")
VALUES = ("q", "k", "v", "scores", "mask", "pattern", "z", "out")
STACK_VALUES = ("embed", "pos_encoding", "input")


def layout(family: str) -> str:
    """Families that share a module layout: encoder-decoder (Marian, BART, mBART), bert (BERT, RoBERTa), gpt2."""
    return {"marian": "encoder-decoder", "bart": "encoder-decoder", "mbart": "encoder-decoder",
            "roberta": "bert"}.get(family, family)


def stack_paths(family: str) -> dict[str, tuple[str, str, str]]:
    """stack → module paths of (token embedding, position embedding, first layer). The stacks are named as our
    own models' (encoder reads the source, decoder the target), so traces keep the same keys."""
    if layout(family) == "encoder-decoder":
        return {stack: (f"model.{stack}.embed_tokens", f"model.{stack}.embed_positions", f"model.{stack}.layers.0")
                for stack in ("encoder", "decoder")}
    if layout(family) == "bert":
        return {"encoder": (f"{family}.embeddings.word_embeddings", f"{family}.embeddings.position_embeddings",
                            f"{family}.encoder.layer.0")}
    return {"decoder": ("transformer.wte", "transformer.wpe", "transformer.h.0")}


class HuggingFaceError(CheckpointError):
    """A Hugging Face model that cannot be opened; the message names the input and what to do."""


@dataclass
class HuggingFaceModel:
    model: nn.Module                       # the transformers model, in eval mode
    family: str                            # config.model_type
    folder: Path
    kinds: tuple[str, ...]
    layer_counts: dict[str, int]           # kind → number of layers
    heads: int
    hook_names: list[str] = field(default_factory=list)

    def layers(self, kind: str) -> int:
        """Layers of one attention kind (0 for a kind the family does not have), as TransformerConfig.layers."""
        return self.layer_counts.get(kind, 0)

    @property
    def config(self) -> "Shape":
        """The model's shape, read as the pages read our TransformerConfig (model.config.heads, .layers(kind)…)."""
        config = self.model.config
        d_model = getattr(config, "d_model", None) or config.hidden_size
        return Shape(self.heads, d_model, d_model // self.heads, self.layers("encoder"), self.layers("decoder"),
                     config.vocab_size, getattr(config, "max_position_embeddings", None)
                     or getattr(config, "n_positions", 512), self.layer_counts)

    def attention_scaling(self, kind: str, layer: int) -> float:
        """The factor the scores q·k are multiplied by: 1/√d_k, except where a family says otherwise (GPT-2 can
        switch scaling off, or also divide by the layer number)."""
        config = self.model.config
        scaling = self.config.d_k ** -0.5
        if layout(self.family) == "gpt2":
            scaling = scaling if getattr(config, "scale_attn_weights", True) else 1.0
            if getattr(config, "scale_attn_by_inverse_layer_idx", False):
                scaling /= layer + 1
        return scaling

    def attention_output_weights(self, kind: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """W_O [d_model, heads × d_k] (stored [out, in] like nn.Linear) and its bias, of one attention block."""
        block = next(module for module in self.model.modules() if getattr(module, "explorer_block", None) == (kind, layer))
        if layout(self.family) == "encoder-decoder":
            projection = block.out_proj
        elif layout(self.family) == "bert":
            projection = self.model.get_submodule(f"{self.family}.encoder.layer.{layer}.attention.output.dense")
        else:
            projection = block.c_proj
        weight = projection.weight.detach()
        # GPT-2's Conv1D stores [in, out]
        return (weight.T if layout(self.family) == "gpt2" else weight), projection.bias.detach()

    def run_with_cache(self, names: str | list[str] = "*", head_mask: dict | None = None,
                       **inputs) -> tuple[object, ActivationCache]:
        """One forward pass of the transformers model on `inputs` (input_ids, decoder_input_ids, …): its output
        and the values at the hook points matching names; a name that matches none raises HookNameError."""
        with torch.no_grad(), capture(self.hook_names, names, head_mask=head_mask) as cache:
            output = self.model(**inputs)
        return output, cache


@dataclass
class Shape:
    """What the pages read of a model's shape, named as in our TransformerConfig."""

    heads: int
    d_model: int
    d_k: int
    encoder_layers: int
    decoder_layers: int
    vocab_size: int
    max_len: int
    layer_counts: dict

    def layers(self, kind: str) -> int:
        return self.layer_counts.get(kind, 0)


@dataclass
class HuggingFaceCheckpoint:
    """A Hugging Face model with its tokenizer, where the app expects a Checkpoint of ours."""

    path: Path
    model: HuggingFaceModel
    tokenizer: object                       # the folder's transformers tokenizer
    info: dict = field(default_factory=dict)
    frequencies: None = None                # no training-corpus counts: no domain notice, no error

    @property
    def name(self) -> str:
        return self.path.name


def pickle_only(folder: Path) -> list[str]:
    """The pickle weight files of a folder that has no safetensors weights (loading those could run code)."""
    if any(folder.glob("*.safetensors")):
        return []
    return sorted(p.name for p in folder.iterdir() if p.name in PICKLE_WEIGHTS or p.suffix in (".bin", ".pt", ".pth"))


def hub_snapshot(model_id: str) -> Path | None:
    """The folder of a hub model already in the local Hugging Face cache (no network), or None."""
    from huggingface_hub import constants

    repo = Path(constants.HF_HUB_CACHE) / f"models--{model_id.replace('/', '--')}"
    ref = repo / "refs" / "main"
    if ref.is_file():
        snapshot = repo / "snapshots" / ref.read_text().strip()
        if (snapshot / "config.json").is_file():
            return snapshot
    snapshots = sorted((repo / "snapshots").glob("*/config.json")) if (repo / "snapshots").is_dir() else []
    return snapshots[-1].parent if snapshots else None


def hugging_face_folder(model: str | Path) -> Path | None:
    """The folder to open for `model` if it is a Hugging Face model (a folder whose config.json has a
    model_type, or a hub id in the local cache); None if it is not one (e.g. a checkpoint of ours)."""
    folder = Path(model).expanduser()
    if (folder / "config.json").is_file():
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        return folder if isinstance(config, dict) and "model_type" in config else None
    if not folder.exists() and re.fullmatch(r"[\w.-]+(/[\w.-]+)?", str(model)):
        snapshot = hub_snapshot(str(model))
        if snapshot is None:
            raise HuggingFaceError(f"{model}: not a folder, and no copy of this Hugging Face model is in the local "
                                   "cache; download it once where there is a network (huggingface-cli download "
                                   f"{model}) or give the folder that holds its config.json")
        return snapshot
    return None


def explorer_attention(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                       **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' eager attention, value for value, through the explorer's hook points and head gates."""
    kind, layer = module.explorer_block
    names = [attention_hook(kind, layer, value_name) for value_name in ("q", "k", "v", "scores", "mask", "pattern", "z")]
    query, key, value = apply_hooks(names[0], query), apply_hooks(names[1], key), apply_hooks(names[2], value)
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = apply_hooks(names[3], torch.matmul(query, key.transpose(-1, -2)) * scaling)
    if attention_mask is not None:
        # transformers' eager mask is additive: 0 where a query may attend, the dtype's minimum where not.
        allowed = apply_hooks(names[4], attention_mask[..., : key.shape[-2]] == 0)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    pattern = apply_hooks(names[5], torch.softmax(scores, dim=-1).to(value.dtype))
    z = apply_hooks(names[6], torch.matmul(nn.functional.dropout(pattern, p=dropout, training=module.training), value))
    gate = current_head_gate(kind, layer)
    if gate is not None:
        z = z * gate.to(z.dtype).reshape(-1, z.shape[1], 1, 1)
    return z.transpose(1, 2).contiguous(), pattern


def _register_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    AttentionInterface.register(ATTENTION_NAME, explorer_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, eager_mask)   # masks as eager attention gets them


def _block_output_hook(name: str):
    def replace_output(module, args, output):
        return (apply_hooks(name, output[0]), *output[1:])
    return replace_output


def _embedding_hook(name: str, scale: float):
    """Reads a token embedding (× the stack's scale where the stack applies it outside the module); read-only."""
    def read(module, args, output):
        if is_hooked(name):
            apply_hooks(name, output * scale)
    return read


def _position_hook(name: str):
    """Reads the position embeddings as [1 or batch, positions, d_model] (Marian's come without a batch axis)."""
    def read(module, args, output):
        if is_hooked(name):
            apply_hooks(name, output if output.dim() == 3 else output[None])
    return read


def _first_layer_hook(name: str):
    """What the first layer receives (hidden_states, positional or keyword); a hook may replace it."""
    def replace_input(module, args, kwargs):
        if not is_hooked(name):
            return None
        if args:
            return (apply_hooks(name, args[0]), *args[1:]), kwargs
        return args, dict(kwargs, hidden_states=apply_hooks(name, kwargs["hidden_states"]))
    return replace_input


def _add_stack_hooks(model: nn.Module, family: str) -> list[str]:
    """Hook points for each stack's token embedding, position embedding and first-layer input; their names."""
    names = []
    for stack, (tokens, positions, first_layer) in stack_paths(family).items():
        embedding = model.get_submodule(tokens)
        # Marian multiplies by √d_model outside the embedding module; BART's scaled embedding does it inside.
        owner = model.get_submodule(tokens.rsplit(".", 1)[0])
        scale = 1.0 if hasattr(embedding, "embed_scale") else float(getattr(owner, "embed_scale", 1.0) or 1.0)
        embedding.register_forward_hook(_embedding_hook(stack_hook(stack, "embed"), scale))
        model.get_submodule(positions).register_forward_hook(_position_hook(stack_hook(stack, "pos_encoding")))
        model.get_submodule(first_layer).register_forward_pre_hook(_first_layer_hook(stack_hook(stack, "input")),
                                                                   with_kwargs=True)
        names += [stack_hook(stack, value) for value in STACK_VALUES]
    return names


def load_hugging_face(folder: str | Path) -> HuggingFaceModel:
    """Open a Hugging Face model folder (safetensors weights) of a supported family, ready for hooks and masks."""
    folder = Path(folder)
    refused = pickle_only(folder)
    if refused:
        raise HuggingFaceError(
            f"{folder}: has only pickle weights ({', '.join(refused)}), and loading pickle can run code, so the "
            "explorer refuses it. Convert it once, where you trust the file: "
            "AutoModel.from_pretrained(folder).save_pretrained(folder, safe_serialization=True)")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise HuggingFaceError(f"{folder / 'config.json'}: not readable JSON ({error.__class__.__name__})") from None
    family = config.get("model_type")
    if family not in FAMILIES:
        raise HuggingFaceError(f"{folder}: model_type {family!r} is not supported; the explorer opens "
                               f"{', '.join(FAMILIES)}")
    import transformers

    transformers.utils.logging.disable_progress_bar()      # no "Loading weights" bar in the CLI's stderr
    transformers.utils.logging.set_verbosity_error()
    _register_attention()
    class_name, kinds = FAMILIES[family]
    try:
        model = getattr(transformers, class_name).from_pretrained(
            folder, local_files_only=True, use_safetensors=True, attn_implementation=ATTENTION_NAME)
    except (OSError, ValueError, RuntimeError) as error:
        raise HuggingFaceError(f"{folder}: cannot be loaded as {class_name} ({str(error).splitlines()[0]})") from None
    model.eval()
    layers = {kind: 0 for kind in kinds}
    hook_names = []
    for path, module in model.named_modules():
        for pattern, kind in BLOCK_PATHS:
            found = pattern.search(path)
            if found and kind in kinds:
                layer = int(found.group(1))
                module.explorer_block = (kind, layer)   # which block this is: fixed metadata, not per-call state
                module.register_forward_hook(_block_output_hook(attention_hook(kind, layer, "out")))
                layers[kind] = max(layers[kind], layer + 1)
                hook_names += [attention_hook(kind, layer, value) for value in VALUES]
    hook_names += _add_stack_hooks(model, family)
    heads = getattr(model.config, "num_attention_heads", None) or model.config.encoder_attention_heads
    return HuggingFaceModel(model, family, folder, kinds, layers, heads, hook_names)
