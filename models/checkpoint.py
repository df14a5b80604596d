"""Checkpoint folders: config.json, model.safetensors (fp16), tokenizer.model, token_frequencies.json.

Loading never unpickles anything: safetensors holds raw tensors only, so a checkpoint cannot run code.
Every problem becomes a CheckpointError whose one-line message names the file and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from safetensors import SafetensorError

from models.tokenizer import Tokenizer
from models.transformer import Transformer, TransformerConfig
from models.weights_file import read_weights, write_weights

CONFIG, WEIGHTS, TOKENIZER, FREQUENCIES = "config.json", "model.safetensors", "tokenizer.model", "token_frequencies.json"


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded."""


@dataclass
class Checkpoint:
    path: Path
    model: Transformer
    tokenizer: Tokenizer
    info: dict                       # the whole config.json: architecture, data, training, scores
    frequencies: dict[str, list[int]] | None = None  # "source"/"target" piece counts in the training corpus

    @property
    def name(self) -> str:
        return self.path.name


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


def load_weights(model: Transformer, path: Path) -> None:
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        state = read_weights(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a readable safetensors file ({str(error).splitlines()[0]})") from None
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
    model = Transformer(config)
    load_weights(model, folder / WEIGHTS)
    model.eval()
    frequencies = None
    if (folder / FREQUENCIES).is_file():
        frequencies = _read_json(folder / FREQUENCIES)
    return Checkpoint(folder, model, tokenizer, info, frequencies)
