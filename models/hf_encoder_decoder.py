"""Hugging Face encoder–decoders laid out as BART is (Marian, BART, mBART; M2M100/NLLB and T5 build on it):
`model.encoder.layers.L.self_attn`, `model.decoder.layers.L.self_attn` and `.encoder_attn`. They translate."""

from __future__ import annotations

import re

import torch

from .hugging_face import HuggingFaceModel
from .interface import Architecture, Batch, Translates
from .vocabulary import Kind


class EncoderDecoder(HuggingFaceModel, Translates):
    kinds = (Kind.ENCODER, Kind.DECODER, Kind.CROSS)
    generation_batch = 16
    norm_placement = "post"             # Marian's and BART's layers norm after the residual sum; M2M100's before
    block_paths = (
        (re.compile(r"(?:^|\.)encoder\.layers\.(\d+)\.self_attn$"), "encoder"),
        (re.compile(r"(?:^|\.)decoder\.layers\.(\d+)\.self_attn$"), "decoder"),
        (re.compile(r"(?:^|\.)decoder\.layers\.(\d+)\.encoder_attn$"), "cross"),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        encoder = self.model.get_encoder()
        table = getattr(getattr(encoder, "embed_positions", None), "weight", None)
        # Marian's table is sinusoidal, all the sin dimensions then all the cos ones: position 0 is [0 … 0, 1 … 1].
        first = None if table is None else table[0].detach().float()
        halves = first is not None and bool(torch.allclose(first[: len(first) // 2], torch.tensor(0.0))
                                            and torch.allclose(first[len(first) // 2:], torch.tensor(1.0)))
        scaled = " × √d_model" if getattr(self.model.config, "scale_embedding", False) else ""
        added = "+ sinusoidal position" if halves else "+ learned position"
        normed = "→ layer norm " if hasattr(encoder, "layernorm_embedding") else ""
        self.architecture = Architecture("sinusoidal-halves" if halves else "learned", norm_placement=self.norm_placement,
                                         embedding_steps=(f"token embedding{scaled}", added,
                                                          f"{normed}= input to layer 0"))

    def layer_parts(self, stack: str) -> tuple[tuple[str, ...], str]:
        cross = ("encoder_attn_layer_norm",) if stack == "decoder" else ()
        return ("self_attn_layer_norm", *cross, "final_layer_norm"), "fc2"

    def stack_paths(self) -> dict:
        prefix = self.model.base_model_prefix
        return {stack: (f"{prefix}.{stack}.embed_tokens", f"{prefix}.{stack}.embed_positions",
                        f"{prefix}.{stack}.layers.0") for stack in ("encoder", "decoder")}

    def forward(self, source: Batch | None = None, target: Batch | None = None) -> torch.Tensor | None:
        assert source is not None               # an encoder–decoder always reads a source
        inputs = {"input_ids": source.ids, "attention_mask": source.present.long()}
        if target is None:
            self.model.get_encoder()(**inputs)
            return None
        return self.model(**inputs, decoder_input_ids=target.ids, decoder_attention_mask=target.present.long()).logits

    def own_max_length(self) -> int | None:
        """The length the checkpoint itself caps generation at (`max_length` in its generation_config.json, or
        its config.json), start and forced tokens included, where it sets one; transformers' generate keeps to it."""
        return getattr(getattr(self.model, "generation_config", None), "max_length", None)

    def own_step_limit(self) -> int | None:
        """own_max_length in output tokens: less the start token and any forced ones (a language token)."""
        longest = self.own_max_length()
        return None if longest is None else max(1, longest - len(self.decoder_prefix()))

    def step_limit(self, source_length: int) -> int:
        own = self.own_step_limit()
        return min(self.max_positions - 1, 2 * source_length + 10, *([own] if own else []))

    def step_limit_rule(self, source_length: int) -> str:
        own = self.own_step_limit()
        if own is not None and own < min(self.max_positions - 1, 2 * source_length + 10):
            prefix = len(self.decoder_prefix())
            return (f"the model's own max_length of {self.own_max_length()} (its generation_config.json) less "
                    f"{prefix} start token{'s' * (prefix > 1)} = {own} steps")
        return f"2 × {source_length} source tokens + 10 = {self.step_limit(source_length)} steps"

    @torch.no_grad()
    def generate(self, sources: list[list[int]], beam_size: int = 1, alpha: float = 0.6) -> list[list[int]]:
        """transformers' own generate, in batches of similar length; beam search with its length penalty alpha."""
        outputs: list[list[int]] = [[] for _ in sources]
        order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
        from transformers import GenerationConfig  # heavy: only once a Hugging Face model is in use

        beams = {"num_beams": beam_size, "length_penalty": alpha} if beam_size > 1 else {"num_beams": 1}
        forced = len(self.decoder_prefix()) - 1         # tokens generate is made to produce before the output
        # Only what the explorer asks for: a config's forced end token at the length limit (Marian, BART), minimum
        # length or banned n-grams would make the output differ from the argmax the pages show step by step
        # (plain_generation switches them off).
        plain = GenerationConfig(decoder_start_token_id=self.start_id, eos_token_id=self.end_id, pad_token_id=self.pad_id)
        for start in range(0, len(order), self.generation_batch):
            chunk = order[start: start + self.generation_batch]
            batch = self.pad([sources[i] for i in chunk])
            generated = self.model.generate(input_ids=batch.ids.to(self.device),
                                            attention_mask=batch.present.long().to(self.device), do_sample=False,
                                            generation_config=plain,
                                            max_new_tokens=self.step_limit(batch.ids.shape[1]) + forced,
                                            **beams, **self.plain_generation())
            for i, row in zip(chunk, generated.tolist()):
                outputs[i] = self.output_of(row[1 + forced:])
        return outputs

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """The decoder's final LayerNorm where it has one (M2M100, mBART: pre-norm; Marian and BART norm inside
        each layer), the output projection, and Marian's and BART's final_logits_bias."""
        self.output_stack(stack)
        norm = getattr(self.model.get_decoder(), "layer_norm", None)
        logits = self.model.lm_head(hidden if norm is None else norm(hidden))
        bias = getattr(self.model, "final_logits_bias", None)
        return logits if bias is None else logits + bias

    def output_of(self, generated: list[int]) -> list[int]:
        """The output ids of one generated row (after the start token): up to the end token."""
        return generated[: generated.index(self.end_id)] if self.end_id in generated else generated
