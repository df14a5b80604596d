"""The induction-head demonstration's model (explorer/analyses/lecture/induction_demo.py; Olsson et al. 2022): a
decoder-only, attention-only Transformer — token embedding + learned positions, causal self-attention layers with
residuals and pre-layer norm, a final norm and the unembedding; no MLP, no tokenizer, no checkpoint folder.

It is not behind the model interface (models/interface.py): the demonstration trains it from scratch on random token
ids and reads its patterns directly, so the forward returns them beside the logits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class AttentionOnlyConfig:
    vocab: int = 64             # token ids 0 … vocab−1, none special
    context: int = 64           # positions (a learned table)
    d_model: int = 64
    heads: int = 4
    layers: int = 2


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads, self.norm = heads, nn.LayerNorm(d_model)
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, n, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(batch, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        future = torch.ones(n, n, dtype=torch.bool).triu(1)
        pattern = scores.masked_fill(future, float("-inf")).softmax(-1)          # [batch, heads, query, key]
        return self.out((pattern @ v).transpose(1, 2).reshape(batch, n, d)), pattern


class AttentionOnly(nn.Module):
    """Token + learned position embeddings, attention-only residual blocks, a final norm and the unembedding."""

    def __init__(self, config: AttentionOnlyConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.position = nn.Embedding(config.context, config.d_model)
        self.blocks = nn.ModuleList(CausalSelfAttention(config.d_model, config.heads) for _ in range(config.layers))
        self.norm, self.unembed = nn.LayerNorm(config.d_model), nn.Linear(config.d_model, config.vocab)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """ids [batch, positions] → (logits [batch, positions, vocab], each layer's pattern [batch, heads, q, k])."""
        x = self.embed(ids) + self.position(torch.arange(ids.shape[1]))
        patterns = []
        for block in self.blocks:
            written, pattern = block(x)
            x = x + written
            patterns.append(pattern)
        return self.unembed(self.norm(x)), patterns
