"""Hugging Face encoders laid out as BERT is (BERT, RoBERTa): `<prefix>.encoder.layer.L.attention.self`. With
their masked-language-model head (BertForMaskedLM) they fill in masked tokens; they generate nothing. The bare
encoder of a sentence-transformers folder is models/sentence_encoder.py, on the same layout."""

from __future__ import annotations

import re

import torch

from .hugging_face import HuggingFaceModel
from .interface import Architecture, Batch, FillsMask
from .vocabulary import Kind


class BertLayout(HuggingFaceModel):
    """Where a BERT-like encoder keeps its blocks and embeddings, with or without a head on top."""
    kinds = (Kind.ENCODER,)
    block_paths = ((re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.attention\.self$"), "encoder"),)
    # BERT normalises after each residual sum, as Vaswani et al. do (post-norm).
    architecture = Architecture("learned", norm_placement="post",
                                embedding_steps=("token embedding", "+ learned position (+ segment)",
                                                 "→ layer norm = input to layer 0"))

    @property
    def encoder_prefix(self) -> str:
        """"bert." under a head (BertForMaskedLM.bert), "" for the bare encoder (BertModel)."""
        return "" if self.model.base_model is self.model else f"{self.model.base_model_prefix}."

    def stack_paths(self) -> dict:
        prefix = self.encoder_prefix
        return {"encoder": (f"{prefix}embeddings.word_embeddings", f"{prefix}embeddings.position_embeddings",
                            f"{prefix}encoder.layer.0")}

    def output_projection(self, kind: str, layer: int):
        return self.model.get_submodule(f"{self.encoder_prefix}encoder.layer.{layer}.attention.output.dense")

    def layer_parts(self, stack: str) -> tuple[tuple[str, ...], str]:
        return ("attention.output.LayerNorm", "output.LayerNorm"), "output.dense"


class EncoderOnly(BertLayout, FillsMask):
    def forward(self, source: Batch | None = None, target: Batch | None = None) -> torch.Tensor | None:
        assert source is not None               # an encoder reads the source alone
        return self.model(input_ids=source.ids, attention_mask=source.present.long()).logits

    def unembed(self, stack: str, hidden: torch.Tensor) -> torch.Tensor:
        """The masked-language-model head (BERT's cls: dense, activation, LayerNorm, decoder; RoBERTa's lm_head):
        the encoder itself ends with its last layer."""
        self.output_stack(stack)
        head = self.model.cls if hasattr(self.model, "cls") else self.model.lm_head
        return head(hidden)
