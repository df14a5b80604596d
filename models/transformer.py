"""The encoder–decoder Transformer of Vaswani et al. 2017, with a named HookPoint at every value worth seeing.

Hook names (L = layer index, A = self_attn | cross_attn):
    encoder.embed, encoder.pos_encoding, encoder.input, encoder.layers.L.self_attn.{q,k,v,scores,mask,
    pattern,z,out}, encoder.layers.L.resid_post, encoder.output; the same under decoder (with cross_attn);
    logits.
Attention tensors keep the head axis: q/k/v/z are [batch, heads, position, d_k]; scores/pattern are
[batch, heads, query, key]; mask is a boolean [batch, 1, query, key] (True = may attend).

Layers are pre-norm (LayerNorm before each sublayer, one final LayerNorm per stack, as in The Annotated
Transformer): it trains stably without a long warm-up, which matters on a CPU budget.

Without gradients some products run on copies of the weights in faster layouts, and modules skip
nn.Module.__call__ unless torch's own hooks are registered: all of that lives in models/fast_inference.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, cast

import torch
import torch.nn.functional as F
from torch import nn

from . import fast_inference
from .fast_inference import FastCall, needs_gradients
from .hooks import ActivationCache, HookPoint, capture, current_head_gate, name_hook_points
from .vocabulary import Kind, attention_block

if TYPE_CHECKING:       # the Vision Transformer builds its encoder of these layers (for the annotations only)
    from .vision_transformer import VitConfig


@dataclass(frozen=True)
class TransformerConfig:
    vocab_size: int = 8000
    d_model: int = 256
    heads: int = 8
    encoder_layers: int = 3
    decoder_layers: int = 3
    d_ff: int = 1024
    dropout: float = 0.1
    max_len: int = 256
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self) -> None:
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by {self.heads} heads")

    @property
    def d_k(self) -> int:
        return self.d_model // self.heads

    def to_dict(self) -> dict:
        return asdict(self)

    def layers(self, kind: str) -> int:
        return self.encoder_layers if kind == "encoder" else self.decoder_layers


def sinusoidal_positions(max_len: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...): Vaswani et al. 2017, section 3.5."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


class Projection(FastCall):
    """An affine map y = x Wᵀ + b with W stored [out, in], as in nn.Linear and Hugging Face models."""

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_out, d_in))
        self.bias = nn.Parameter(torch.empty(d_out))
        nn.init.xavier_uniform_(self.weight)
        nn.init.uniform_(self.bias, -d_in ** -0.5, d_in ** -0.5)  # nn.Linear's default bias initialisation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fast_inference.linear(self, x, self.weight, self.bias)


class Dropout(FastCall, nn.Dropout):
    """nn.Dropout that costs nothing outside training (about 20 calls per decoding step)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, self.p, True) if self.training else x


class LayerNorm(FastCall, nn.LayerNorm):
    pass


class MultiHeadAttention(FastCall):
    def __init__(self, config: TransformerConfig | VitConfig, kind: str, layer: int) -> None:
        super().__init__()
        self.kind, self.layer = kind, layer  # which head gate applies: kind in encoder/decoder/cross
        self.heads, self.d_k = config.heads, config.d_k
        d = config.d_model
        self.w_q, self.w_k, self.w_v, self.w_o = (Projection(d, d) for _ in range(4))
        self.dropout = Dropout(config.dropout)
        self.q, self.k, self.v = HookPoint(), HookPoint(), HookPoint()
        self.scores, self.mask, self.pattern = HookPoint(), HookPoint(), HookPoint()
        self.z, self.out = HookPoint(), HookPoint()

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.d_k).transpose(1, 2)

    def project(self, x: torch.Tensor, source: torch.Tensor, cache: dict | None) -> tuple[torch.Tensor, ...]:
        """q from x, k and v from source, split into heads; cross-attention reuses cached encoder k/v."""
        if self.kind == "cross":
            q = self.split_heads(self.w_q(x))
            if cache is not None and "k" in cache:
                return q, cache["k"], cache["v"]
            return q, self.split_heads(self.w_k(source)), self.split_heads(self.w_v(source))
        projections = (self.w_q, self.w_k, self.w_v)
        if needs_gradients(self.w_q.weight):
            return tuple(self.split_heads(w(x)) for w in projections)
        return tuple(self.split_heads(part) for part in fast_inference.fused_qkv(self, x, projections))

    def forward(self, x: torch.Tensor, source: torch.Tensor, mask: torch.Tensor | None,
                cache: dict | None = None) -> torch.Tensor:
        """x: [B, Q, d] queries; source: [B, K, d] keys/values (x itself for self-attention).

        cache (incremental decoding): self-attention appends this step's k/v to those of earlier steps;
        cross-attention computes the encoder's k/v once and reuses them.
        """
        q, k, v = self.project(x, source, cache)
        if cache is not None and self.kind != "cross" and "k" in cache:
            k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
        if cache is not None:
            cache["k"], cache["v"] = k, v
        q, k, v = self.q(q), self.k(k), self.v(v)

        scores = self.scores(q @ k.transpose(-2, -1) / math.sqrt(self.d_k))
        if mask is not None:  # None: nothing to hide (one new decoder position sees every earlier one)
            scores = scores.masked_fill(~self.mask(mask), float("-inf"))
        pattern = self.pattern(torch.softmax(scores, dim=-1))
        z = self.z(self.dropout(pattern) @ v)
        gate = current_head_gate(self.kind, self.layer)
        if gate is not None:
            # [heads] gates every sentence alike; [batch, heads] gives each sentence its own gate, so one
            # backward pass yields per-sentence gradients (head importance).
            z = z * gate.to(z.dtype).reshape(-1, self.heads, 1, 1)
        batch, _, length, _ = z.shape
        merged = z.transpose(1, 2).reshape(batch, length, self.heads * self.d_k)
        return self.out(self.w_o(merged))


class FeedForward(FastCall):
    def __init__(self, config: TransformerConfig | VitConfig) -> None:
        super().__init__()
        self.w_1 = Projection(config.d_model, config.d_ff)
        self.w_2 = Projection(config.d_ff, config.d_model)
        self.dropout = Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(self.dropout(F.relu(self.w_1(x))))



class EncoderLayer(FastCall):
    def __init__(self, config: TransformerConfig | VitConfig, layer: int) -> None:
        super().__init__()
        # Hook points are registered in forward order (they name themselves in that order, name_hook_points);
        # they hold no weights, so the parameters' order is the checkpoints'.
        self.resid_pre, self.ln1 = HookPoint(), HookPoint()
        self.self_attn = MultiHeadAttention(config, "encoder", layer)
        self.resid_mid, self.ln2, self.mlp_out = HookPoint(), HookPoint(), HookPoint()
        self.feed_forward = FeedForward(config)
        self.norm_attn, self.norm_ff = LayerNorm(config.d_model), LayerNorm(config.d_model)
        self.dropout = Dropout(config.dropout)
        self.resid_post = HookPoint()

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.resid_pre(x)
        normed = self.ln1(self.norm_attn(x))
        x = self.resid_mid(x + self.dropout(self.self_attn(normed, normed, mask)))
        x = x + self.dropout(self.mlp_out(self.feed_forward(self.ln2(self.norm_ff(x)))))
        return self.resid_post(x)



class DecoderLayer(FastCall):
    def __init__(self, config: TransformerConfig, layer: int) -> None:
        super().__init__()
        self.resid_pre, self.ln1 = HookPoint(), HookPoint()       # in forward order, as in EncoderLayer
        self.self_attn = MultiHeadAttention(config, "decoder", layer)
        self.ln2 = HookPoint()
        self.cross_attn = MultiHeadAttention(config, "cross", layer)
        self.resid_mid, self.ln3, self.mlp_out = HookPoint(), HookPoint(), HookPoint()
        self.feed_forward = FeedForward(config)
        self.norm_self, self.norm_cross, self.norm_ff = (LayerNorm(config.d_model) for _ in range(3))
        self.dropout = Dropout(config.dropout)
        self.resid_post = HookPoint()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor,
                cross_mask: torch.Tensor | None, cache: dict | None = None) -> torch.Tensor:
        x = self.resid_pre(x)
        normed = self.ln1(self.norm_self(x))
        x = x + self.dropout(self.self_attn(normed, normed, self_mask, None if cache is None else cache["self"]))
        x = x + self.dropout(self.cross_attn(self.ln2(self.norm_cross(x)), memory, cross_mask,
                                             None if cache is None else cache["cross"]))
        x = self.resid_mid(x)
        x = x + self.dropout(self.mlp_out(self.feed_forward(self.ln3(self.norm_ff(x)))))
        return self.resid_post(x)



class Stack(nn.Module):
    """Embedding + positional encoding + layers + final LayerNorm: the encoder or the decoder."""

    def __init__(self, config: TransformerConfig, embedding: nn.Embedding, layer_type: type, count: int) -> None:
        super().__init__()
        self.embedding = embedding  # shared by encoder, decoder and the output projection
        self.scale = math.sqrt(config.d_model)
        self.layers = nn.ModuleList(layer_type(config, i) for i in range(count))
        self.norm = LayerNorm(config.d_model)
        self.dropout = Dropout(config.dropout)
        self.embed, self.pos_encoding, self.input, self.output = HookPoint(), HookPoint(), HookPoint(), HookPoint()

    def embed_tokens(self, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        token = self.embed(self.embedding(ids) * self.scale)
        position = self.pos_encoding(positions[None])
        return self.dropout(self.input(token + position))


class Transformer(nn.Module):
    positions: torch.Tensor         # a buffer (register_buffer): the sinusoidal table [max_len, d_model]

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.d_model, padding_idx=config.pad_id)
        self.encoder = Stack(config, self.embedding, EncoderLayer, config.encoder_layers)
        self.decoder = Stack(config, self.embedding, DecoderLayer, config.decoder_layers)
        self.logits = HookPoint()
        self.register_buffer("positions", sinusoidal_positions(config.max_len, config.d_model), persistent=False)
        self.hook_names = name_hook_points(self)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, parameter in self.named_parameters():
            if parameter.dim() > 1 and "embedding" not in name:
                nn.init.xavier_uniform_(parameter)
        # Embeddings are multiplied by sqrt(d_model) on input and tied to the output projection.
        nn.init.normal_(self.embedding.weight, std=self.config.d_model ** -0.5)
        with torch.no_grad():
            self.embedding.weight[self.config.pad_id].zero_()

    # -- masks -----------------------------------------------------------------------------------
    def padding_mask(self, src: torch.Tensor) -> torch.Tensor:
        """[B, 1, 1, S]: True where the key is a real token."""
        return (src != self.config.pad_id)[:, None, None, :]

    @staticmethod
    def look_ahead_mask(length: int, device: torch.device | None = None) -> torch.Tensor:
        """[1, 1, T, T]: True on and below the diagonal (a position sees itself and the past)."""
        return torch.ones(length, length, dtype=torch.bool, device=device).tril()[None, None]

    # -- forward -----------------------------------------------------------------------------------
    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src [B, S] → (memory [B, S, d], source padding mask [B, 1, 1, S])."""
        fast_inference.use_torch_calls_if_hooked_globally(self)
        mask = self.padding_mask(src)
        x = self.encoder.embed_tokens(src, self.positions[: src.shape[1]])
        for layer in self.encoder.layers:
            x = layer(x, mask)
        return self.encoder.output(self.encoder.norm(x)), mask

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None,
               cache: list[dict] | None = None, start: int = 0) -> torch.Tensor:
        """tgt [B, T] (positions start..start+T) → logits [B, T, vocab].

        With a cache (from new_cache), earlier positions' keys/values are reused and tgt holds only the new ones.
        src_mask None: every source position is a real token (nothing for cross-attention to hide).
        """
        fast_inference.use_torch_calls_if_hooked_globally(self)
        length = tgt.shape[1]
        x = self.decoder.embed_tokens(tgt, self.positions[start: start + length])
        # Query i (absolute position start+i) may see keys 0..start+i. In a full (teacher-forced) pass
        # target padding is hidden too; incrementally, positions after a sentence's end are discarded anyway.
        if cache is None:
            self_mask = self.look_ahead_mask(length, tgt.device) & self.padding_mask(tgt)
        elif length == 1:
            self_mask = None  # the newest position may see all cached ones: no mask to build or apply
        else:
            self_mask = self.look_ahead_mask(start + length, tgt.device)[:, :, start:, :]
        for i, layer in enumerate(self.decoder.layers):
            x = layer(x, memory, self_mask, src_mask, None if cache is None else cache[i])
        x = self.decoder.output(self.decoder.norm(x))
        return self.logits(self.output_projection(x))

    def output_projection(self, x: torch.Tensor) -> torch.Tensor:
        """x @ embeddingᵀ (tied weights). Without gradients, multiply by a contiguous transposed copy instead
        (the same numbers, ~2x faster per decoding step); the copy is rebuilt whenever the weights change."""
        weight = self.embedding.weight
        if needs_gradients(weight):
            return F.linear(x, weight)
        return fast_inference.transposed_output_projection(self, x, weight)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)

    def run_with_cache(self, src: torch.Tensor, tgt: torch.Tensor, names: str | list[str] = "*",
                       head_mask: Mapping[Kind, torch.Tensor] | None = None) -> tuple[torch.Tensor, ActivationCache]:
        """One teacher-forced pass: (logits, the values at every hook point matching names), as in
        TransformerLens. A name or glob pattern that matches no hook point raises ValueError naming it.
        Read the cache by meaning: cache.attention("cross", 1, "pattern"), cache.layers("encoder", "pattern")."""
        with capture(self.hook_names, names, head_mask=head_mask) as cache:
            logits = self(src, tgt)
        return logits, cache

    def new_cache(self) -> list[dict]:
        return [{"self": {}, "cross": {}} for _ in self.decoder.layers]

    def attention_scaling(self, kind: str, layer: int) -> float:
        """The factor scores q·k are multiplied by: 1/√d_k in every block (as Hugging Face models report theirs)."""
        return self.config.d_k ** -0.5

    def attention_output_weights(self, kind: str, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """W_O [d_model, heads × d_k] (stored [out, in]) and its bias, of one attention block."""
        block = cast(MultiHeadAttention, self.get_submodule(attention_block(kind, layer)))
        return block.w_o.weight.detach(), block.w_o.bias.detach()

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
