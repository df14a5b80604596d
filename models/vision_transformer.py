"""A Vision Transformer (Dosovitskiy et al. 2021, "An image is worth 16×16 words") for small grey images, and the
bundled one behind the model interface: an image is cut into square patches, each patch's pixels are projected
to d_model, a learned class token goes first, a learned position table is added (one row per token, 1-D as in the
paper: the 2-D layout is left to learn), and pre-norm encoder layers read them; the class token's final state, through
a layer norm and a linear head, gives the class logits.

The layers are the translation Transformer's own (models/transformer.py: the same attention with the same hook
points and per-call head gates), so every hook name is the encoder's: encoder.embed (patch embeddings, with the
class token), encoder.pos_encoding, encoder.input, encoder.layers.L.self_attn.{q,k,v,scores,pattern,z,out},
encoder.layers.L.resid_post, encoder.output, logits. No mask: every token sees every other.

A folder: config.json (task "classify", the architecture, the model card) and model.safetensors (no pickle).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import cast

import torch
from torch import nn

from . import fast_inference
from .checkpoint import CheckpointError, readable_weights
from .hooks import HookPoint, name_hook_points
from .interface import CLASSIFY, Architecture, AttentionModel, ImageInput
from .transformer import Dropout, EncoderLayer, LayerNorm, MultiHeadAttention, Projection
from .vocabulary import Kind
from .weights_file import write_weights

CONFIG, WEIGHTS = "config.json", "model.safetensors"


@dataclass(frozen=True)
class VitConfig:
    image_height: int = 8
    image_width: int = 8
    patch_size: int = 2
    classes: int = 10
    d_model: int = 64
    heads: int = 4
    encoder_layers: int = 4
    d_ff: int = 128
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by {self.heads} heads")
        if self.image_height % self.patch_size or self.image_width % self.patch_size:
            raise ValueError(f"{self.patch_size}-pixel patches do not tile a {self.image_height}×{self.image_width} image")

    @property
    def d_k(self) -> int:
        return self.d_model // self.heads

    @property
    def grid(self) -> tuple[int, int]:
        return self.image_height // self.patch_size, self.image_width // self.patch_size

    @property
    def tokens(self) -> int:
        """The class token and one token a patch."""
        return 1 + self.grid[0] * self.grid[1]

    def layers(self, kind: str) -> int:
        return self.encoder_layers if kind == "encoder" else 0


def patches(images: torch.Tensor, size: int) -> torch.Tensor:
    """[B, H, W] → [B, patches, size × size], patches row by row (left to right, top to bottom)."""
    batch, height, width = images.shape
    grid = images.reshape(batch, height // size, size, width // size, size)
    return grid.permute(0, 1, 3, 2, 4).reshape(batch, (height // size) * (width // size), size * size)


class ImageStack(nn.Module):
    """Patch embedding + class token + learned positions + encoder layers + final LayerNorm."""

    def __init__(self, config: VitConfig) -> None:
        super().__init__()
        self.patch_size = config.patch_size
        self.patch_embedding = Projection(config.patch_size ** 2, config.d_model)
        self.class_token = nn.Parameter(torch.zeros(config.d_model))
        self.positions = nn.Parameter(torch.randn(config.tokens, config.d_model) * 0.02)
        self.layers = nn.ModuleList(EncoderLayer(config, i) for i in range(config.encoder_layers))
        self.norm = LayerNorm(config.d_model)
        self.dropout = Dropout(config.dropout)
        self.embed, self.pos_encoding, self.input, self.output = HookPoint(), HookPoint(), HookPoint(), HookPoint()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        embedded = self.patch_embedding(patches(images, self.patch_size))
        tokens = torch.cat([self.class_token.expand(len(images), 1, -1), embedded], dim=1)
        x = self.dropout(self.input(self.embed(tokens) + self.pos_encoding(self.positions[None])))
        for layer in self.layers:
            x = layer(x, None)
        return self.output(self.norm(x))


class VisionTransformer(nn.Module):
    def __init__(self, config: VitConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = ImageStack(config)
        self.head = Projection(config.d_model, config.classes)
        self.logits = HookPoint()
        self.hook_names = name_hook_points(self)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """images [B, H, W] (0 … 1) → logits [B, tokens, classes]; token 0, the class token, is the prediction."""
        fast_inference.use_torch_calls_if_hooked_globally(self)
        return self.logits(self.head(self.encoder(images)))


@dataclass
class DigitsClassifier(AttentionModel, ImageInput):
    """A Vision Transformer of ours behind the interface: it reads a grey image and names its class."""

    path: Path
    model: VisionTransformer
    info: dict

    kinds = (Kind.ENCODER,)
    architecture = Architecture("learned", norm_placement="pre", embedding_steps=(
        "patch embedding (and the class token)", "+ learned position (one per token)", "= input to layer 0"))

    def __post_init__(self) -> None:
        config = self.model.config
        self.heads, self.d_model, self.d_k = config.heads, config.d_model, config.d_k
        self.max_positions = config.tokens
        self.hook_names = self.model.hook_names
        self.image_shape = (config.image_height, config.image_width)
        self.patch_size = config.patch_size
        self.class_names = tuple(self.info.get("class_names") or (str(c) for c in range(config.classes)))

    def layers(self, kind: str) -> int:
        return self.model.config.layers(kind)

    def forward(self, source=None, target=None) -> torch.Tensor:
        return self.model(source.ids)

    def attention_scaling(self, kind: str, layer: int) -> float:
        return self.model.config.d_k ** -0.5

    def attention_output_weights(self, kind: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        block = cast(MultiHeadAttention, self.model.encoder.layers[layer].self_attn)   # torch types it Tensor | Module
        return block.w_o.weight.detach(), block.w_o.bias.detach()

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """The final LayerNorm and the classification head: at the class token, the prediction; at a patch, what
        the head would read there."""
        if stack != "encoder":
            raise ValueError(f"{self.name} has no {stack!r} stack")
        return self.model.head(self.model.encoder.norm(hidden))


def save_classifier(folder: str | Path, model: VisionTransformer, info: dict) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().float().contiguous() for name, tensor in model.state_dict().items()}
    write_weights(state, folder / WEIGHTS)
    document = dict(info, task=CLASSIFY, architecture=asdict(model.config))
    (folder / CONFIG).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return folder


def config_of(info: dict, path: Path) -> VitConfig:
    architecture = info.get("architecture")
    if not isinstance(architecture, dict):
        raise CheckpointError(f"{path}: has no 'architecture' object")
    known = {f.name for f in fields(VitConfig)}
    values = {name: value for name, value in architecture.items() if name in known}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (name != "dropout" and not isinstance(value, int)):
            raise CheckpointError(f"{path}: architecture.{name} must be a whole number, got {value!r}")
    try:
        return VitConfig(**values)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: bad architecture ({error})") from None


def load_classifier(folder: Path, info: dict) -> DigitsClassifier:
    """The classifier in folder, whose config.json (already read: info) says task "classify"."""
    model = VisionTransformer(config_of(info, folder / CONFIG))
    path = folder / WEIGHTS
    state = readable_weights(path)
    expected = model.state_dict()
    if set(state) != set(expected):
        difference = sorted(set(expected) ^ set(state))[:3]
        raise CheckpointError(f"{path}: tensors do not match config.json's architecture ({difference})")
    for name, tensor in state.items():
        if tensor.shape != expected[name].shape or not torch.isfinite(tensor).all():
            raise CheckpointError(f"{path}: {name} has shape {list(tensor.shape)} or values config.json does not allow")
    model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
    model.eval()
    return DigitsClassifier(folder, model, info)
