"""Our checkpoint folders: config.json, model.safetensors (fp16), tokenizer.model, token_frequencies.json; and
the Checkpoint, our Transformer behind the one model interface (models/interface.py).

Loading never unpickles anything: safetensors holds raw tensors only, so a checkpoint cannot run code.
Every problem becomes a CheckpointError whose one-line message names the file and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
from safetensors import SafetensorError

from .decoding import LENGTH_RATIO, LENGTH_SLACK, BeamResult, beam_search, step_limit, translate_ids
from .interface import (
    Aligned,
    Architecture,
    Batch,
    CachedBeamSearch,
    Encoded,
    ExplorerModel,
    ModelError,
    TrainingSnapshots,
    Translates,
)
from .tokenizer import BOS, EOS, PAD, UNK, Tokenizer, clean_text
from .transformer import Transformer, TransformerConfig, sinusoidal_positions
from .vocabulary import Kind
from .weights_file import read_weights, write_weights
from .word_alignment import pieces_of_words, sentence_text, spans_from_surfaces

CONFIG, WEIGHTS, TOKENIZER, FREQUENCIES = "config.json", "model.safetensors", "tokenizer.model", "token_frequencies.json"


class CheckpointError(ModelError):
    """A checkpoint folder of ours that cannot be loaded."""


@dataclass
class Checkpoint(ExplorerModel, Translates, TrainingSnapshots, CachedBeamSearch):
    """One of our trained Transformers with its SentencePiece vocabulary: translates English into German."""

    path: Path
    model: Transformer
    tokenizer: Tokenizer
    info: dict                       # the whole config.json: architecture, data, training, scores
    frequencies: dict[str, list[int]] | None = None  # "source"/"target" piece counts in the training corpus

    kinds = (Kind.ENCODER, Kind.DECODER, Kind.CROSS)
    pad_id, start_id, end_id, unk_id = PAD, BOS, EOS, UNK
    special_ids = frozenset((PAD, BOS, EOS))
    reads_sentence_case = True                  # trained on Multi30k's captions, written in sentence case
    generation_batch = 64                       # translate_ids' batches
    architecture = Architecture("sinusoidal", norm_placement="pre",     # transformer.py: LayerNorm before a sublayer
                                embedding_steps=("token embedding × √d_model", "+ positional encoding",
                                                 "= input to layer 0"))

    def __post_init__(self) -> None:
        config = self.model.config
        self.heads, self.d_model, self.d_k = config.heads, config.d_model, config.d_k
        self.max_positions = config.max_len
        self.hook_names = self.model.hook_names
        self.target_language = self.info.get("target_language", "German")
        self.token_frequencies = self.frequencies

    def layers(self, kind: str) -> int:
        return self.model.config.layers(kind) if kind in self.kinds else 0

    # -- text --
    def encode(self, text: str) -> Encoded:
        return self.tokenizer.encode(text, self.max_positions)

    def encode_reference(self, text: str) -> list[int]:
        return self.tokenizer.encode_ids(text)[: self.max_positions - 2] + [EOS]

    def pieces(self, ids: list[int]) -> list[str]:
        return self.tokenizer.pieces(ids)

    def detokenize(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids)

    def align_words(self, words: list[str], space_after: list[bool] | None = None) -> Aligned | None:
        """The words' sentence tokenized once (models/word_alignment.py); each piece's surface is its exact text."""
        text, word_spans = sentence_text(words, space_after)
        if not text or clean_text(text) != text:
            return None
        pieces = self.tokenizer.sp.encode(text, return_type="proto").pieces
        if "".join(piece.surface for piece in pieces) != text or len(pieces) + 1 > self.max_positions:
            return None
        word_pieces = pieces_of_words(word_spans, spans_from_surfaces([piece.surface for piece in pieces]))
        return None if word_pieces is None else Aligned([piece.id for piece in pieces] + [EOS], word_pieces)

    def unknown_characters(self, text: str) -> list[str]:
        cleaned = clean_text(text)
        surfaces, ids = self.tokenizer.sp.encode(cleaned, out_type=str), self.tokenizer.sp.encode(cleaned)
        return list(dict.fromkeys(s.lstrip("▁") for s, i in zip(surfaces, ids) if i == UNK and s.lstrip("▁")))

    # -- computation --
    def forward(self, source: Batch | None = None, target: Batch | None = None) -> torch.Tensor | None:
        assert source is not None               # an encoder–decoder always reads a source
        if target is None:
            self.model.encode(source.ids.to(self.device))
            return None
        return self.model(source.ids, target.ids)

    def generate(self, sources: list[list[int]], beam_size: int = 1, alpha: float = 0.6) -> list[list[int]]:
        return translate_ids(self.model, sources, beam_size=beam_size, batch_size=self.generation_batch, alpha=alpha)

    def step_limit(self, source_length: int) -> int:
        return step_limit(self.model, source_length)

    def step_limit_rule(self, source_length: int) -> str:
        return (f"{LENGTH_RATIO} × {source_length} source tokens + {LENGTH_SLACK} = "
                f"{self.step_limit(source_length)} steps")

    def beam_search(self, source_ids: list[int], beam_size: int, alpha: float = 0.6) -> BeamResult:
        return beam_search(self.model, torch.tensor([source_ids]), beam_size, alpha)   # with its key/value cache

    def attention_scaling(self, kind: str, layer: int) -> float:
        return self.model.attention_scaling(kind, layer)

    def with_weights(self, snapshot: Path) -> Checkpoint:
        """A model of its own (never the shared one) with a training snapshot's weights."""
        model = unfilled_model(self.model.config)
        load_weights(model, snapshot)
        model.eval()
        return replace(self, model=model)

    def attention_output_weights(self, kind: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.attention_output_weights(kind, layer)

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """The decoder's final LayerNorm (pre-norm layers leave the stream un-normed), then the output projection
        (the embedding, tied)."""
        if stack != "decoder":
            raise ValueError(f"{self.name} predicts from its decoder; the {stack!r} stream has no output projection")
        return self.model.output_projection(self.model.decoder.norm(hidden))


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: not valid JSON ({error.__class__.__name__})") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    return value


def config_from_info(info: dict, path: Path) -> TransformerConfig:
    architecture = info.get("architecture")
    if not isinstance(architecture, dict):
        raise CheckpointError(f"{path}: has no 'architecture' object")
    known = {f.name: f for f in fields(TransformerConfig)}
    for name, value in architecture.items():
        if name not in known:
            continue
        wanted = int if known[name].type in (int, "int") else float
        # bool is an int to Python, but never a size; a float such as 256.0 is not a layer count either.
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (wanted is int and not isinstance(value, int)):
            kind = "a whole number" if wanted is int else "a number"
            raise CheckpointError(f"{path}: architecture.{name} must be {kind}, got {value!r}")
    try:
        return TransformerConfig(**{k: v for k, v in architecture.items() if k in known})
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: bad architecture ({error})") from None


def state_dict_for_saving(model: Transformer) -> dict[str, torch.Tensor]:
    """fp16 weights; the embedding is stored once (it is tied to the decoder and the output projection)."""
    state = {}
    for name, tensor in model.state_dict().items():
        if name.startswith(("encoder.embedding.", "decoder.embedding.")):
            continue
        state[name] = tensor.detach().to(torch.float16).contiguous()
    return state


def save_checkpoint(folder: str | Path, model: Transformer, tokenizer_path: str | Path, info: dict,
                    frequencies: dict[str, list[int]] | None = None) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_weights(state_dict_for_saving(model), folder / WEIGHTS)
    tokenizer_bytes = Path(tokenizer_path).read_bytes()
    if Path(tokenizer_path).resolve() != (folder / TOKENIZER).resolve():
        (folder / TOKENIZER).write_bytes(tokenizer_bytes)
    info = dict(info, architecture=model.config.to_dict())
    (folder / CONFIG).write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if frequencies is not None:
        (folder / FREQUENCIES).write_text(json.dumps(frequencies), encoding="utf-8")
    return folder


def readable_weights(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a weights file of ours, or a CheckpointError naming the file and what is wrong with it."""
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        return read_weights(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a readable safetensors file ({str(error).splitlines()[0]})") from None


def unfilled_model(config: TransformerConfig) -> Transformer:
    """A Transformer whose weights are about to be read from a file (load_weights). Built on the meta device, so
    no random weights are drawn only to be overwritten (en-de-h8 loads in 0.12 CPU-s where it took 0.16), then given
    memory on the CPU; the sinusoidal table, the one tensor no file holds, is computed again. The meta device is
    this thread's only: a session loading a model beside it is unaffected."""
    with torch.device("meta"):
        model = Transformer(config)
    model.to_empty(device="cpu")
    model.positions.copy_(sinusoidal_positions(config.max_len, config.d_model))
    return model


def load_weights(model: Transformer, path: Path) -> None:
    state = readable_weights(path)
    expected = {k: v for k, v in model.state_dict().items()
                if not k.startswith(("encoder.embedding.", "decoder.embedding."))}
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        detail = f"missing {missing[:3]}" if missing else f"unexpected {unexpected[:3]}"
        raise CheckpointError(f"{path}: tensors do not match config.json's architecture ({detail})")
    for name, tensor in state.items():
        if tensor.shape != expected[name].shape:
            raise CheckpointError(f"{path}: {name} has shape {list(tensor.shape)}, config.json implies "
                                  f"{list(expected[name].shape)}")
        if not torch.isfinite(tensor).all():
            raise CheckpointError(f"{path}: {name} contains NaN or infinite values")
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)


def load_checkpoint(folder: str | Path) -> Checkpoint:
    folder = Path(folder).expanduser()
    if folder.is_file():
        raise CheckpointError(f"{folder}: is a file, not a checkpoint folder; choose the folder that holds "
                              "config.json, model.safetensors and tokenizer.model")
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: no such folder; a checkpoint is a folder with config.json, "
                              "model.safetensors and tokenizer.model")
    info = _read_json(folder / CONFIG)
    config = config_from_info(info, folder / CONFIG)
    tokenizer_path = folder / TOKENIZER
    if not tokenizer_path.is_file():
        raise CheckpointError(f"{tokenizer_path}: missing")
    try:
        tokenizer = Tokenizer(tokenizer_path)
    except (OSError, RuntimeError) as error:
        raise CheckpointError(f"{tokenizer_path}: not a SentencePiece model ({str(error).splitlines()[0]})") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{tokenizer_path}: has {tokenizer.vocab_size} pieces but config.json says "
                              f"vocab_size {config.vocab_size}")
    model = unfilled_model(config)
    load_weights(model, folder / WEIGHTS)
    model.eval()
    frequencies = None
    if (folder / FREQUENCIES).is_file():
        frequencies = _read_json(folder / FREQUENCIES)
    return Checkpoint(folder, model, tokenizer, info, frequencies)
