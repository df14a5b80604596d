"""Hugging Face decoder-only language models laid out as Llama is (`model.layers.L.self_attn`; Qwen2 and Mistral
share it): no position table, since rotary positions (RoPE, Su et al. 2021) rotate each head's q and k by an angle
proportional to the position inside every attention block; RMSNorm before each sublayer; and grouped-query
attention, where several query heads share one key/value head. The shared capture (hugging_face.py) expands k and v
to the query heads, so every captured tensor is [batch, heads, query, key] with `heads` the query heads."""

from __future__ import annotations

import re

import torch

from .hf_decoder import DecoderOnly
from .hugging_face import HuggingFaceAttention
from .interface import Architecture


class Llama(DecoderOnly):
    block_paths = ((re.compile(r"(?:^|\.)layers\.(\d+)\.self_attn$"), "decoder"),)

    def __post_init__(self) -> None:
        super().__post_init__()
        config = self.model.config
        # head_dim need not be d_model / heads (an explicit head_dim in the config wins, as in the attention block)
        self.d_k = getattr(config, "head_dim", None) or self.d_model // self.heads
        # The angles per position come from the model's own rotary module (its inv_freq already carries any rope
        # scaling the config asks for), not from a formula of ours.
        frequencies = self.model.model.rotary_emb.inv_freq.detach().float()
        self.architecture = Architecture(
            "rotary", norm_placement="pre", rotary_frequencies=tuple(frequencies.tolist()), embedding_steps=(
                "token embedding", "+ nothing: every layer rotates q and k by the position", "= input to layer 0"))

    def stack_paths(self) -> dict:
        return {"decoder": ("model.embed_tokens", None, "model.layers.0")}

    def layer_parts(self, stack: str) -> tuple[tuple[str, ...], str]:
        return ("input_layernorm", "post_attention_layernorm"), "mlp"

    def encode_reference(self, text: str) -> list[int]:
        """A reference continues the prompt, so it gets no start token of its own (Llama's tokenizer adds one)."""
        ids = self.tokenize(" " + text, add_special_tokens=False).input_ids
        return ids[: self.max_positions // 2] + [self.end_id]

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """The final RMSNorm, then the output projection."""
        self.output_stack(stack)
        return self.model.lm_head(self.model.model.norm(hidden))

    def output_projection(self, kind: str, layer: int):
        return self.block(kind, layer).o_proj

    # nn.Linear projections and the block's own scaling, as every layout but GPT-2's (whose Conv1D is [in, out])
    attention_scaling = HuggingFaceAttention.attention_scaling
    attention_output_weights = HuggingFaceAttention.attention_output_weights
