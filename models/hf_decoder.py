"""Hugging Face decoder-only language models laid out as GPT-2 is: `transformer.h.L.attn`. They continue a prompt."""

from __future__ import annotations

import re

import torch

from .hugging_face import HuggingFaceModel
from .interface import Architecture, Batch, Continues, Encoded
from .vocabulary import Kind

CONTINUATION_TOKENS = 30      # how far a prompt is continued


class DecoderOnly(HuggingFaceModel, Continues):
    kinds = (Kind.DECODER,)
    block_paths = ((re.compile(r"(?:^|\.)h\.(\d+)\.attn$"), "decoder"),)
    architecture = Architecture("learned", norm_placement="pre")

    def stack_paths(self) -> dict:
        return {"decoder": ("transformer.wte", "transformer.wpe", "transformer.h.0")}

    def layer_parts(self, stack: str) -> tuple[tuple[str, ...], str]:
        return ("ln_1", "ln_2"), "mlp"

    def encode(self, text: str) -> Encoded:
        """The prompt, cut so that the continuation still fits the model's positions."""
        encoded = super().encode(text)
        room = self.max_positions - CONTINUATION_TOKENS
        return Encoded(encoded.ids[:room], encoded.pieces[:room], encoded.truncated or len(encoded.ids) > room)

    def encode_reference(self, text: str) -> list[int]:
        return self.tokenize(" " + text).input_ids[: self.max_positions // 2] + [self.end_id]

    def forward(self, source: Batch | None = None, target: Batch | None = None) -> torch.Tensor | None:
        assert target is not None               # a decoder-only model reads the target alone (prompt + output)
        return self.model(input_ids=target.ids, attention_mask=target.present.long()).logits

    def step_limit(self, source_length: int) -> int:
        return CONTINUATION_TOKENS

    @torch.no_grad()
    def generate(self, sources: list[list[int]], beam_size: int = 1, alpha: float = 0.6) -> list[list[int]]:
        """transformers' own generate, one prompt at a time (a batch would need left padding)."""
        outputs = []
        beams = {"num_beams": beam_size, "length_penalty": alpha} if beam_size > 1 else {"num_beams": 1}
        for prompt in sources:
            ids = torch.tensor([prompt], device=self.device)
            row = self.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                      max_new_tokens=CONTINUATION_TOKENS, pad_token_id=self.end_id, **beams,
                                      **self.plain_generation())[0].tolist()
            new = row[len(prompt):]
            outputs.append(new[: new.index(self.end_id)] if self.end_id in new else new)
        return outputs

    def attention_scaling(self, kind: str, layer: int) -> float:
        """1/√d_k, unless the config switches scaling off or also divides by the layer number."""
        config = self.model.config
        scaling = self.d_k ** -0.5 if getattr(config, "scale_attn_weights", True) else 1.0
        if getattr(config, "scale_attn_by_inverse_layer_idx", False):
            scaling /= layer + 1
        return scaling

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """GPT-2's final LayerNorm ln_f, then the output projection."""
        self.output_stack(stack)
        return self.model.lm_head(self.model.transformer.ln_f(hidden))

    def output_projection(self, kind: str, layer: int):
        return self.block(kind, layer).c_proj

    def attention_output_weights(self, kind: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        projection = self.output_projection(kind, layer)    # GPT-2's Conv1D stores [in, out]
        return projection.weight.detach().T, projection.bias.detach()
