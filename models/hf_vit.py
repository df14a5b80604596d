"""Hugging Face Vision Transformers for image classification (`ViTForImageClassification`): the layout of their
blocks, and pixels in, class logits out. Grey images only: a model of three channels gets the grey value in each.

The image is given as the model was trained to read it (pixel values after its image processor's scaling); the
bundled model (models/vision_transformer.py) reads 0 … 1. The position table is a parameter, not a module, so
the trace's embedding and position rows are not captured for this layout; the first layer's input is.
"""

from __future__ import annotations

import re

import torch

from .hugging_face import HuggingFaceAttention
from .interface import Architecture, Batch, ImageInput
from .vocabulary import Kind


class HuggingFaceImageClassifier(HuggingFaceAttention, ImageInput):
    kinds = (Kind.ENCODER,)
    block_paths = ((re.compile(r"(?:^|\.)layers?\.(\d+)\.attention(?:\.attention)?$"), "encoder"),)
    architecture = Architecture("learned", norm_placement="pre", embedding_steps=(
        "patch embedding (and the class token)", "+ learned position (one per token)", "= input to layer 0"))

    def __post_init__(self) -> None:
        super().__post_init__()
        config = self.model.config
        size = config.image_size if isinstance(config.image_size, int) else config.image_size[0]
        self.image_shape = (size, size)
        self.patch_size = config.patch_size if isinstance(config.patch_size, int) else config.patch_size[0]
        self.class_names = tuple(str(config.id2label.get(i, i)) for i in range(config.num_labels))
        self.max_positions = 1 + self.grid[0] * self.grid[1]

    def stack_paths(self) -> dict:
        return {"encoder": (None, None, f"{self.layers_path()}.0")}

    def layer_parts(self, stack: str) -> tuple[tuple[str, ...], str]:
        newer = f"{self.layers_path()}.0.mlp" in dict(self.model.named_modules())    # transformers ≥ 5's layout
        return ("layernorm_before", "layernorm_after"), "mlp" if newer else "output.dense"

    def layers_path(self) -> str:
        """Where the encoder's layers are (transformers renamed vit.encoder.layer to vit.layers)."""
        names = dict(self.model.named_modules())
        return next(path for path in ("vit.layers", "vit.encoder.layer") if path in names)

    def output_projection(self, kind: str, layer: int):
        block = self.block(kind, layer)
        return getattr(block, "o_proj", None) or self.model.get_submodule(
            f"{self.layers_path()}.{layer}.attention.output.dense")

    def hidden_states(self, source: Batch) -> torch.Tensor:
        channels = self.model.config.num_channels
        pixels = source.ids[:, None].expand(-1, channels, -1, -1)
        return self.model.vit(pixel_values=pixels).last_hidden_state        # after the final layer norm

    def forward(self, source: Batch | None = None, target: Batch | None = None) -> torch.Tensor:
        """Logits at every token: the class token's are the model's own prediction."""
        assert source is not None               # the image
        return self.model.classifier(self.hidden_states(source))

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        self.output_stack(stack)
        return self.model.classifier(self.model.vit.layernorm(hidden))
