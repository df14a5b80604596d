"""T5 (Raffel et al. 2020): an encoder–decoder with no position embeddings at all. Each attention score gets a
learned bias by relative offset (bucketed, one value per head, shared by every layer of a stack from its first
layer), and the scores q·k are not divided by √d_k."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

import torch

from .hf_encoder_decoder import EncoderDecoder
from .interface import Architecture, Encoded

if TYPE_CHECKING:
    from transformers.models.t5.modeling_t5 import T5Attention

RELATIVE_BIAS_KINDS = ("encoder", "decoder")     # cross-attention has no position bias


class T5(EncoderDecoder):
    block_paths = (
        (re.compile(r"(?:^|\.)encoder\.block\.(\d+)\.layer\.0\.SelfAttention$"), "encoder"),
        (re.compile(r"(?:^|\.)decoder\.block\.(\d+)\.layer\.0\.SelfAttention$"), "decoder"),
        (re.compile(r"(?:^|\.)decoder\.block\.(\d+)\.layer\.1\.EncDecAttention$"), "cross"),
    )

    def __post_init__(self) -> None:
        super(EncoderDecoder, self).__post_init__()
        self.architecture = Architecture("relative", norm_placement="pre", embedding_steps=(
            "token embedding", "+ nothing: positions enter every score as a relative bias", "= input to layer 0"))
        # "translate English to German: " when the checkpoint was trained with task prefixes
        task = (getattr(self.model.config, "task_specific_params", None) or {}).get("translation_en_to_de", {})
        self.prefix = task.get("prefix", "")
        self.target_language = "German" if self.prefix else ""

    def layer_parts(self, stack: str) -> tuple[tuple[str, ...], str]:
        sublayers = 3 if stack == "decoder" else 2                 # self-attention, (cross-attention,) feed-forward
        return tuple(f"layer.{i}.layer_norm" for i in range(sublayers)), f"layer.{sublayers - 1}.DenseReluDense"

    def stack_paths(self) -> dict:
        # The token embedding is one module shared by both stacks, so it is read at each stack's first layer.
        return {stack: (None, None, f"{stack}.block.0") for stack in ("encoder", "decoder")}

    def encode(self, text: str) -> Encoded:
        return super().encode(self.prefix + text) if self.prefix else super().encode(text)

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """The decoder's final RMS norm, then × d_model^-0.5 when the output projection is the tied embedding (as
        T5's forward does), then the projection."""
        self.output_stack(stack)
        hidden = self.model.get_decoder().final_layer_norm(hidden)
        config = self.model.config
        if getattr(config, "scale_decoder_outputs", getattr(config, "tie_word_embeddings", True)):
            hidden = hidden * (self.d_model ** -0.5)
        return self.model.lm_head(hidden)

    def output_projection(self, kind: str, layer: int):
        return self.block(kind, layer).o

    def position_bias(self, kind: str, queries: int, keys: int) -> torch.Tensor | None:
        """[heads, queries, keys]: what T5 adds to every score of this kind (from the stack's first layer)."""
        if kind not in RELATIVE_BIAS_KINDS:
            return None
        with torch.no_grad():
            first = cast("T5Attention", self.block(kind, 0))     # its relative bias table, shared by the stack
            return first.compute_bias(queries, keys)[0].float()
