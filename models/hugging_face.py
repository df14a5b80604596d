"""What every Hugging Face layout shares behind the one model interface: capture through transformers' attention
interface, safe loading, the tokenizer, hook points on the embeddings.

Attention is captured from the model's own computation: the model is loaded with an attention function of ours,
registered through transformers' attention interface, which every attention block of the supported families
calls with its q, k, v, mask, scaling (and T5's position bias). It computes exactly what transformers' eager
attention computes, passing each value through the same per-call hooks as our own models (models/hooks.py) under
the same names (`encoder.layers.L.self_attn.pattern`, `decoder.layers.L.cross_attn.z`, …), and gates each head's
z before the output projection when the current call has a head mask. Nothing per call is stored on the shared
model, so concurrent sessions with different heads pruned get their own results.

A layout (hf_encoder_decoder.py, hf_encoder.py, hf_decoder.py; t5.py and m2m100.py build on the first, llama.py on
the last) says where its blocks and embeddings live and how it is called; models/loader.py picks the layout from
config.json.
Loading is safe: weights come from safetensors only, a folder with only pickle weights is refused, and nothing
is downloaded (`local_files_only`).
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self, cast

import torch
from torch import nn

from .checkpoint import CheckpointError
from .folder_checks import AGAIN, first_line, missing_tokenizer_files
from .hooks import apply_hooks, carry, current_head_gate, is_hooked, take_carried
from .interface import Aligned, Architecture, AttentionModel, Encoded, ExplorerModel
from .tokenizer import clean_text
from .vocabulary import Kind, attention_hook, layer_hook, layer_names, stack_hook
from .word_alignment import Span, pieces_of_words, sentence_text, spans_by_matching

ATTENTION_NAME = "attention_explorer"
TOKENIZER_LOCK = threading.RLock()
PICKLE_WEIGHTS = ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index")
VALUES = ("q", "k", "v", "scores", "mask", "pattern", "z", "out")
STACK_VALUES = ("embed", "pos_encoding", "input")


class HuggingFaceError(CheckpointError):
    """A Hugging Face model that cannot be opened; the message names the input and what to do."""


def explorer_attention(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                       position_bias: torch.Tensor | None = None, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' eager attention, value for value, through the explorer's hook points and head gates.
    `scores` are what softmax sees before the mask: q·k × scaling (+ T5's relative position bias)."""
    kind, layer = cast(tuple[str, int], module.explorer_block)     # set by add_hook_points; torch's stubs say Tensor | Module
    names = [attention_hook(kind, layer, value_name) for value_name in ("q", "k", "v", "scores", "mask", "pattern", "z")]
    # Grouped-query attention (Llama, Qwen2, Mistral): k and v come with fewer heads than q, each shared by a group
    # of query heads; expanded as eager attention expands them (repeat_kv), so every head has its own k and v.
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:
        key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    query, key, value = apply_hooks(names[0], query), apply_hooks(names[1], key), apply_hooks(names[2], value)
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling
    if position_bias is not None:
        scores = scores + position_bias[..., : key.shape[-2]]
    scores = apply_hooks(names[3], scores)
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
        if isinstance(output, tuple):
            return (apply_hooks(name, output[0]), *output[1:])
        return apply_hooks(name, output)
    return replace_output


def _reading_hook(name: str, scale: float = 1.0):
    """Reads a module's output, read-only: a token embedding (× the stack's scale where the stack applies it
    outside the module) or position embeddings, as [1 or batch, positions, d_model] (Marian's have no batch axis)."""
    def read(module, args, output):
        if is_hooked(name):
            apply_hooks(name, (output if output.dim() == 3 else output[None]) * scale)
    return read


def _input_hook(name: str):
    """What a layer receives (hidden_states, positional or keyword); a hook may replace it."""
    def replace_input(module, args, kwargs):
        if not is_hooked(name):
            return None
        if args:
            return (apply_hooks(name, args[0]), *args[1:]), kwargs
        return args, dict(kwargs, hidden_states=apply_hooks(name, kwargs["hidden_states"]))
    return replace_input


def _carried_input_hook(name: str):
    """A pre-norm layer's stream after its attention (resid_mid), read where the feed-forward's norm reads it. The
    layer adds it to the feed-forward's output inside its own forward, so a replacement is made here, in the
    norm's input, and its difference carried to the feed-forward's output (_feed_forward_hook): the layer then
    goes on from the replaced stream on both paths."""
    def replace_input(module, args):
        if not is_hooked(name):
            return None
        replaced = apply_hooks(name, args[0])
        if replaced is args[0]:
            return None
        carry(name, replaced - args[0])
        return (replaced, *args[1:])
    return replace_input


def _feed_forward_hook(name: str, carried_from: str | None):
    """The feed-forward's output before the residual sum (mlp_out), plus the difference a pre-norm resid_mid hook
    carried (_carried_input_hook)."""
    def replace_output(module, args, output):
        output = apply_hooks(name, output)
        difference = take_carried(carried_from) if carried_from else None
        return output if difference is None else output + difference
    return replace_output


def pickle_only(folder: Path) -> list[str]:
    """The pickle weight files of a folder that has no safetensors weights (loading those could run code)."""
    if any(folder.glob("*.safetensors")):
        return []
    return sorted(p.name for p in folder.iterdir() if p.name in PICKLE_WEIGHTS or p.suffix in (".bin", ".pt", ".pth"))


def read_config(folder: Path) -> dict:
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise HuggingFaceError(f"{folder / 'config.json'}: not readable JSON ({error.__class__.__name__})") from None


def load_tokenizer(folder: Path):
    """The folder's own tokenizer (SentencePiece for Marian, WordPiece for BERT, byte-level BPE for GPT-2…)."""
    from transformers import AutoTokenizer

    try:
        with warnings.catch_warnings():       # Marian's "Recommended: pip install sacremoses" (a text normaliser)
            warnings.filterwarnings("ignore", message=".*sacremoses")
            return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, TypeError, RuntimeError) as error:
        missing = missing_tokenizer_files(folder)
        why = f"of the files its tokenizer reads, not there: {', '.join(missing)}" if missing else first_line(error)
        raise HuggingFaceError(f"{folder}: no tokenizer the explorer can load ({why}); {AGAIN}") from None


def piece_labels(tokenizer):
    """ids → the pieces as the figures label them. Byte-level BPE (GPT-2, BART, RoBERTa) stores a piece as bytes
    mapped to letters (a space is Ġ, é is Ã©); its labels are the piece's text with a leading space written ▁,
    as SentencePiece writes it. Other tokenizers' pieces are already text."""
    byte_level = any(token.startswith("Ġ") for token in tokenizer.convert_ids_to_tokens(
        tokenizer(" a", add_special_tokens=False).input_ids))
    if not byte_level:
        return tokenizer.convert_ids_to_tokens
    special = set(tokenizer.all_special_tokens)

    def labels(ids: list[int]) -> list[str]:
        tokens = tokenizer.convert_ids_to_tokens(ids)
        return [token if token in special else tokenizer.convert_tokens_to_string([token]).replace(" ", "▁")
                for token in tokens]
    return labels


def config_value(config, *names, default=None):
    """The first of several names a family uses for the same setting (d_model / hidden_size / n_embd …)."""
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


@dataclass
class HuggingFaceAttention(AttentionModel):
    """A transformers model behind the interface's core: its attention captured, its stacks hooked. Layouts set
    the class attributes below; a model of text (HuggingFaceModel) adds its tokenizer, an image model its pixels."""

    path: Path
    # The transformers model, in eval mode: an nn.Module whose own parts (config, lm_head, vit…) each layout reaches
    # into by name. Any: torch's stubs would type every such part Tensor | Module.
    model: Any
    family: str                            # config.model_type, for the model's description only
    info: dict = field(default_factory=dict)
    layer_counts: dict = field(default_factory=dict)
    hook_names: list = field(default_factory=list)
    folder: Path | None = None             # where the files are (a hub id's path is the id)

    # Set by each layout (class attributes, not fields): (compiled pattern of a block's module path, kind), with the
    # layer as the pattern's first group; how it builds its blocks.
    block_paths: ClassVar[tuple[tuple[re.Pattern[str], str], ...]] = ()
    architecture = Architecture("learned")

    # -- opening ------------------------------------------------------------------------------------
    @classmethod
    def open(cls, folder: Path, family: str, transformers_class: str) -> Self:
        import transformers

        transformers.utils.logging.disable_progress_bar()      # no "Loading weights" bar in the CLI's stderr
        transformers.utils.logging.set_verbosity_error()
        _register_attention()
        try:
            model = getattr(transformers, transformers_class).from_pretrained(
                folder, local_files_only=True, use_safetensors=True, attn_implementation=ATTENTION_NAME)
        except (OSError, ValueError, RuntimeError) as error:
            raise HuggingFaceError(f"{folder}: cannot be loaded as {transformers_class} "
                                   f"({str(error).splitlines()[0]})") from None
        model.eval()
        loaded = cls.assembled(folder, model, family)
        loaded.add_hook_points()
        loaded.info = {"description": f"Hugging Face {family} model ({', '.join(loaded.kinds)} attention)"}
        return loaded

    @classmethod
    def assembled(cls, folder: Path, model: nn.Module, family: str) -> Self:
        """The loaded transformers model behind the interface (a model of text loads its tokenizer here too)."""
        return cls(folder, model, family, folder=folder)

    def __post_init__(self) -> None:
        config = self.model.config
        self.d_model = config_value(config, "d_model", "hidden_size", "n_embd")
        self.heads = config_value(config, "num_attention_heads", "encoder_attention_heads", "n_head", "num_heads")
        self.d_k = config_value(config, "d_kv", default=self.d_model // self.heads)
        self.max_positions = config_value(config, "max_position_embeddings", "n_positions", default=512)

    def add_hook_points(self) -> None:
        """Mark each attention block with its (kind, layer) and hook its output, the stacks' embeddings and each
        layer's streams, norms and feed-forward (models/vocabulary.py's layer_names, in forward order)."""
        self.layer_counts = {kind: 0 for kind in self.kinds}
        for path, module in self.model.named_modules():
            for pattern, kind in self.block_paths:
                found = pattern.search(path)
                if found and kind in self.kinds:
                    layer = int(found.group(1))
                    module.explorer_block = (kind, layer)   # which block this is: fixed metadata, not per-call state
                    self.layer_counts[kind] = max(self.layer_counts[kind], layer + 1)
        for kind, layers in self.layer_counts.items():
            # `out` is what the output projection W_O makes of every head's z (BERT's block stops before it)
            for layer in range(layers):
                self.output_projection(kind, layer).register_forward_hook(
                    _block_output_hook(attention_hook(kind, layer, "out")))
        names = []
        for stack, (tokens, positions, first_layer) in self.stack_paths().items():
            if tokens:
                embedding = self.model.get_submodule(tokens)
                # Marian multiplies by √d_model outside the embedding module; BART's scaled embedding does it inside.
                owner = self.model.get_submodule(tokens.rsplit(".", 1)[0])
                scale = 1.0 if hasattr(embedding, "embed_scale") else float(getattr(owner, "embed_scale", 1.0) or 1.0)
                embedding.register_forward_hook(_reading_hook(stack_hook(stack, "embed"), scale))
                names.append(stack_hook(stack, "embed"))
            if positions:
                reader = _reading_hook(stack_hook(stack, "pos_encoding"))
                self.model.get_submodule(positions).register_forward_hook(reader)
                names.append(stack_hook(stack, "pos_encoding"))
            self.model.get_submodule(first_layer).register_forward_pre_hook(
                _input_hook(stack_hook(stack, "input")), with_kwargs=True)
            names.append(stack_hook(stack, "input"))
            kinds = [kind for kind in (Kind.ENCODER,) if stack == "encoder" and self.has(kind)] or [
                kind for kind in (Kind.DECODER, Kind.CROSS) if stack == "decoder" and self.has(kind)]
            layers = first_layer.rsplit(".", 1)[0]
            for layer in range(self.layers(stack)):
                self.hook_layer(f"{layers}.{layer}", stack, layer)
                names += layer_names(stack, layer, kinds, self.pre_norm)
        self.hook_names = names

    @property
    def pre_norm(self) -> bool:
        return self.architecture.norm_placement == "pre"

    def hook_layer(self, path: str, stack: str, layer: int) -> None:
        """One layer's hook points, named as our own models name them: the stream before it (resid_pre), each
        layer norm's output (ln1 …), the stream after its attention (resid_mid), the feed-forward's output
        (mlp_out) and the stream after it (resid_post)."""
        norms, feed_forward = self.layer_parts(stack)
        block = self.model.get_submodule(path)
        block.register_forward_pre_hook(_input_hook(layer_hook(stack, layer, "resid_pre")), with_kwargs=True)
        for number, norm in enumerate(norms, 1):
            self.model.get_submodule(f"{path}.{norm}").register_forward_hook(
                _block_output_hook(layer_hook(stack, layer, f"ln{number}")))
        middle = layer_hook(stack, layer, "resid_mid")
        if self.pre_norm:           # the stream after attention is what the feed-forward's norm reads
            self.model.get_submodule(f"{path}.{norms[-1]}").register_forward_pre_hook(_carried_input_hook(middle))
        else:                       # post-norm: the last attention norm's output is the stream
            self.model.get_submodule(f"{path}.{norms[-2]}").register_forward_hook(_block_output_hook(middle))
        self.model.get_submodule(f"{path}.{feed_forward}").register_forward_hook(
            _feed_forward_hook(layer_hook(stack, layer, "mlp_out"), middle if self.pre_norm else None))
        block.register_forward_hook(_block_output_hook(layer_hook(stack, layer)))

    def layer_parts(self, stack: str) -> tuple[tuple[str, ...], str]:
        """(its layer norms' paths in a layer, in forward order; the path of the module whose output is the
        feed-forward's, before the residual sum)."""
        raise NotImplementedError

    def stack_paths(self) -> dict[str, tuple[str, str | None, str]]:
        """stack → module paths of (token embedding, position embedding or None, first layer)."""
        raise NotImplementedError

    def block(self, kind: str, layer: int) -> nn.Module:
        return next(module for module in self.model.modules() if getattr(module, "explorer_block", None) == (kind, layer))

    # -- shape --
    def layers(self, kind: str) -> int:
        return self.layer_counts.get(kind, 0)

    # -- arithmetic --
    def attention_scaling(self, kind: str, layer: int) -> float:
        """The factor the block passes to the attention interface (T5: 1, no scaling)."""
        return float(getattr(self.block(kind, layer), "scaling", self.d_k ** -0.5))

    def output_projection(self, kind: str, layer: int) -> nn.Module:
        return cast(nn.Module, self.block(kind, layer).out_proj)

    def attention_output_weights(self, kind: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        projection = cast(nn.Linear, self.output_projection(kind, layer))   # every layout's but GPT-2's (its own method)
        bias = projection.bias if projection.bias is not None else torch.zeros(projection.weight.shape[0])
        return projection.weight.detach(), bias.detach()

    def output_stack(self, stack: str) -> None:
        """unembed's check: only the stack the model predicts from has an output projection."""
        own = "decoder" if self.has("decoder") else "encoder"
        if stack != own:
            raise ValueError(f"{self.name} predicts from its {own}; the {stack!r} stream has no output projection")


@dataclass
class HuggingFaceModel(HuggingFaceAttention, ExplorerModel):
    """A transformers model of text and its tokenizer behind the interface."""

    tokenizer: Any = None                  # the folder's transformers tokenizer (load_tokenizer)
    target_language: str = ""

    @classmethod
    def assembled(cls, folder: Path, model: nn.Module, family: str) -> Self:
        return cls(folder, model, family, folder=folder, tokenizer=load_tokenizer(folder))

    def __post_init__(self) -> None:
        super().__post_init__()
        config, tokenizer = self.model.config, self.tokenizer
        self.end_id = config_value(config, "eos_token_id", default=tokenizer.eos_token_id)
        self.pad_id = self.end_id if tokenizer.pad_token_id is None else tokenizer.pad_token_id
        self.start_id = config_value(config, "decoder_start_token_id", default=self.end_id)
        self.mask_id = tokenizer.mask_token_id
        self.unk_id = tokenizer.unk_token_id
        self.special_ids = frozenset(tokenizer.all_special_ids)
        with TOKENIZER_LOCK:
            self._labels = piece_labels(tokenizer)

    # -- text --
    def encode(self, text: str) -> Encoded:
        cleaned = clean_text(text)
        ids = self.tokenize(cleaned).input_ids
        truncated = len(ids) > self.max_positions
        if truncated:
            ids = self.tokenize(cleaned, truncation=True, max_length=self.max_positions).input_ids
        return Encoded(ids, self.pieces(ids), truncated)

    def encode_reference(self, text: str) -> list[int]:
        return self.tokenize(text_target=clean_text(text), truncation=True, max_length=self.max_positions - 1).input_ids

    def tokenize(self, *args, **kwargs):
        """The tokenizer, one call at a time: every session shares it, and a call that truncates (or a slow
        tokenizer's target mode) changes its state while it runs."""
        with TOKENIZER_LOCK:
            return self.tokenizer(*args, **kwargs)

    def pieces(self, ids: list[int]) -> list[str]:
        with TOKENIZER_LOCK:
            return self._labels(list(ids))

    def detokenize(self, ids: list[int]) -> str:
        with TOKENIZER_LOCK:
            return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def unknown_characters(self, text: str) -> list[str]:
        if self.unk_id is None or not getattr(self.tokenizer, "is_fast", False):
            return []
        cleaned = clean_text(text)
        encoded = self.tokenize(cleaned, add_special_tokens=False, return_offsets_mapping=True)
        return list(dict.fromkeys(cleaned[start:end].strip() for token, (start, end)
                                  in zip(encoded.input_ids, encoded.offset_mapping)
                                  if token == self.unk_id and cleaned[start:end].strip()))

    def align_words(self, words: list[str], space_after: list[bool] | None = None) -> Aligned | None:
        """The words' sentence tokenized once (models/word_alignment.py): a fast tokenizer's offsets say which
        characters each piece covers; a slow one's pieces are read in order in the text."""
        text, word_spans = sentence_text(words, space_after)
        if not text or clean_text(text) != text:
            return None
        spans: list[Span | None] | None
        if getattr(self.tokenizer, "is_fast", False):
            encoded = self.tokenize(text, return_offsets_mapping=True)
            ids = encoded.input_ids
            spans = [None if token in self.special_ids else tuple(span)
                     for token, span in zip(ids, encoded.offset_mapping)]
        else:
            ids = self.tokenize(text).input_ids
            with TOKENIZER_LOCK:
                labels = self.tokenizer.convert_ids_to_tokens(ids)
            spans = spans_by_matching(text, [None if token in self.special_ids else label
                                             for token, label in zip(ids, labels)])
        if spans is None or len(ids) > self.max_positions:
            return None
        word_pieces = pieces_of_words(word_spans, spans)
        return None if word_pieces is None else Aligned(ids, word_pieces)

    def generation_options(self) -> dict:
        """Extra arguments of `generate` (a multilingual model's target language)."""
        return {}

    def plain_generation(self) -> dict:
        """generate's arguments that switch off what a checkpoint's generation config adds to the argmax the pages
        show step by step: a forced end token at the length limit (MarianConfig's default forces id 0, which a tiny
        Marian uses for padding), a minimum length, banned n-grams or tokens, a repetition penalty. Passed as
        arguments, since transformers fills whatever a given GenerationConfig leaves unset from the checkpoint's
        own; the family's generation_options() come on top."""
        neutral = {"forced_bos_token_id": None, "forced_eos_token_id": None, "min_length": 0, "min_new_tokens": None,
                   "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0, "bad_words_ids": None,
                   "suppress_tokens": None, "begin_suppress_tokens": None, "repetition_penalty": 1.0}
        return {**neutral, **self.generation_options()}
