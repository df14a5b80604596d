"""The one vocabulary for attention: its kinds, their labels, and the names of the model's hook points.

Everything else (traces, roles, importance, pages, the CLI's head specs) asks for an activation by
(kind, layer, value) through these functions; no other module spells a hook name.
"""

from __future__ import annotations

ATTENTION_KINDS = ("encoder", "decoder", "cross")
# As in head specs (`enc.0.3`, `dec.2.*`, `cross.1.5`).
SHORT_NAMES = {"encoder": "enc", "decoder": "dec", "cross": "cross"}
KIND_BY_SHORT_NAME = {short: kind for kind, short in SHORT_NAMES.items()}
# Headings, radio buttons and figure titles.
KIND_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention (masked)",
               "cross": "Encoder–decoder cross-attention"}
# bertviz's one-word names for its dropdown.
KIND_WORDS = {"encoder": "Encoder", "decoder": "Decoder", "cross": "Cross"}

# What each attention block exposes: q/k/v/z are [batch, heads, position, d_k]; scores and pattern
# [batch, heads, query, key]; mask [batch, 1, query, key] (True = may attend); out [batch, query, d_model].
ATTENTION_VALUES = ("q", "k", "v", "scores", "mask", "pattern", "z", "out")
PER_HEAD_VALUES = ("pattern", "scores", "q", "k", "v", "z")
# Per stack ("encoder" / "decoder"): embed (token embedding × √d), pos_encoding, input (their sum), output.
STACK_VALUES = ("embed", "pos_encoding", "input", "output")

_BLOCKS = {"encoder": "encoder.layers.{}.self_attn", "decoder": "decoder.layers.{}.self_attn",
           "cross": "decoder.layers.{}.cross_attn"}


def check_kind(kind: str) -> str:
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(ATTENTION_KINDS)}")
    return kind


def attention_block(kind: str, layer: int | str) -> str:
    """The module path of one attention block, e.g. ("cross", 1) → decoder.layers.1.cross_attn."""
    return _BLOCKS[check_kind(kind)].format(layer)


def attention_hook(kind: str, layer: int | str, value: str) -> str:
    """The hook name of one attention value; layer "*" gives the pattern for every layer."""
    if value not in ATTENTION_VALUES:
        raise ValueError(f"unknown attention value {value!r}; expected one of {', '.join(ATTENTION_VALUES)}")
    return f"{attention_block(kind, layer)}.{value}"


def layer_hook(stack: str, layer: int | str) -> str:
    """The residual stream after one layer of a stack (attention + feed-forward), e.g. ("decoder", 2) →
    decoder.layers.2.resid_post: what the logit lens reads and activation patching replaces."""
    if stack not in ("encoder", "decoder"):
        raise ValueError(f"no stack {stack!r}; stacks are encoder and decoder")
    return f"{stack}.layers.{layer}.resid_post"


def stack_hook(stack: str, value: str) -> str:
    """The hook name of a value of the encoder or decoder stack, e.g. ("decoder", "pos_encoding")."""
    if stack not in ("encoder", "decoder") or value not in STACK_VALUES:
        raise ValueError(f"no stack hook {stack!r}/{value!r}; stacks encoder, decoder; values {', '.join(STACK_VALUES)}")
    return f"{stack}.{value}"
