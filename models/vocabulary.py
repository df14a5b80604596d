"""The one vocabulary for attention: its kinds, their labels, and the names of the model's hook points.

Everything else (traces, roles, importance, pages, the CLI's head specs) asks for an activation by
(kind, layer, value) through these functions; no other module spells a hook name.
"""

from __future__ import annotations

from enum import StrEnum


class Side(StrEnum):
    """The two sequences a model reads: the source (the encoder's input: the sentence) and the target (the
    decoder's input: the output so far, or a decoder-only model's whole text)."""

    SOURCE = "source"
    TARGET = "target"


class Kind(StrEnum):
    """A kind of attention, knowing its query side, its key side and its names. A str, so "encoder" == Kind.ENCODER
    and either keys a dict: what arrives as text (a link, a head spec, a saved trace) is a Kind by Kind(text)."""

    ENCODER = "encoder"
    DECODER = "decoder"
    CROSS = "cross"

    @property
    def query_side(self) -> Side:
        """The sequence whose positions ask (the rows of a pattern)."""
        return Side.SOURCE if self is Kind.ENCODER else Side.TARGET

    @property
    def key_side(self) -> Side:
        """The sequence whose positions are looked at (the columns of a pattern)."""
        return Side.TARGET if self is Kind.DECODER else Side.SOURCE

    @property
    def is_self(self) -> bool:
        """Queries and keys are positions of the same sequence (not cross-attention)."""
        return self.query_side is self.key_side

    @property
    def causal(self) -> bool:
        """A query never sees a later key (the decoder's mask)."""
        return self is Kind.DECODER

    @property
    def reads_the_source(self) -> bool:
        """Its keys are the sentence's tokens (encoder self-attention and cross-attention)."""
        return self.key_side is Side.SOURCE

    @property
    def short(self) -> str:
        """As in head specs (`enc.0.3`, `dec.2.*`, `cross.1.5`)."""
        return {"encoder": "enc", "decoder": "dec", "cross": "cross"}[self.value]

    @property
    def heading(self) -> str:
        """Headings, radio buttons and figure titles."""
        return {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention (masked)",
                "cross": "Encoder–decoder cross-attention"}[self.value]

    @property
    def word(self) -> str:
        """bertviz's one-word name for its dropdown."""
        return self.value.capitalize()


ATTENTION_KINDS = tuple(Kind)
STACKS = ("encoder", "decoder")       # the stacks of layers a model may have
SHORT_NAMES = {kind: kind.short for kind in Kind}
KIND_BY_SHORT_NAME = {kind.short: kind for kind in Kind}
KIND_TITLES = {kind: kind.heading for kind in Kind}
KIND_WORDS = {kind: kind.word for kind in Kind}

# What each attention block exposes: q/k/v/z are [batch, heads, position, d_k]; scores and pattern
# [batch, heads, query, key]; mask [batch, 1, query, key] (True = may attend); out [batch, query, d_model].
ATTENTION_VALUES = ("q", "k", "v", "scores", "mask", "pattern", "z", "out")
PER_HEAD_VALUES = ("pattern", "scores", "q", "k", "v", "z")
# Per stack ("encoder" / "decoder"): embed (token embedding × √d), pos_encoding, input (their sum), output.
STACK_VALUES = ("embed", "pos_encoding", "input", "output")
# Per layer of a stack: the residual stream before it, after its attention blocks (before the feed-forward) and
# after it, the feed-forward's output (before the residual sum), and each layer norm's output in forward order
# (ln1, ln2, and ln3 in a decoder layer with cross-attention). All [batch, positions, d_model].
LAYER_VALUES = ("resid_pre", "resid_mid", "resid_post", "mlp_out", "ln1", "ln2", "ln3")

_BLOCKS = {"encoder": "encoder.layers.{}.self_attn", "decoder": "decoder.layers.{}.self_attn",
           "cross": "decoder.layers.{}.cross_attn"}


def check_kind(kind: str) -> Kind:
    """The Kind a text names; ValueError naming the kinds there are."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(ATTENTION_KINDS)}")
    return Kind(kind)


def attention_block(kind: str, layer: int | str) -> str:
    """The module path of one attention block, e.g. ("cross", 1) → decoder.layers.1.cross_attn."""
    return _BLOCKS[check_kind(kind)].format(layer)


def attention_hook(kind: str, layer: int | str, value: str) -> str:
    """The hook name of one attention value; layer "*" gives the pattern for every layer."""
    if value not in ATTENTION_VALUES:
        raise ValueError(f"unknown attention value {value!r}; expected one of {', '.join(ATTENTION_VALUES)}")
    return f"{attention_block(kind, layer)}.{value}"


def layer_hook(stack: str, layer: int | str, value: str = "resid_post") -> str:
    """The hook name of one of a layer's values (LAYER_VALUES), by default the residual stream after the layer
    (attention + feed-forward), e.g. ("decoder", 2) → decoder.layers.2.resid_post: what the logit lens reads and
    activation patching replaces."""
    if stack not in STACKS:
        raise ValueError(f"no stack {stack!r}; stacks are encoder and decoder")
    if value not in LAYER_VALUES:
        raise ValueError(f"unknown layer value {value!r}; expected one of {', '.join(LAYER_VALUES)}")
    return f"{stack}.layers.{layer}.{value}"


def layer_names(stack: str, layer: int, kinds: list[Kind], pre_norm: bool) -> list[str]:
    """A layer's hook names in forward order: its residual stream before it, each sublayer (the attention blocks
    `kinds`, then the feed-forward) with its layer norm before it (pre-norm) or after the residual sum (post-norm),
    the stream after the attention blocks (resid_mid) and after the layer."""
    names = [layer_hook(stack, layer, "resid_pre")]
    sublayers: list[Kind | None] = [*kinds, None]                  # None: the feed-forward
    for number, sublayer in enumerate(sublayers, 1):
        norm = [layer_hook(stack, layer, f"ln{number}")]
        if sublayer is None:
            body = [layer_hook(stack, layer, "mlp_out")]
            names += [layer_hook(stack, layer, "resid_mid")] + norm + body if pre_norm else body + norm
        else:
            body = [attention_hook(sublayer, layer, value) for value in ATTENTION_VALUES]
            names += norm + body if pre_norm else body + norm
            if not pre_norm and number == len(kinds):             # post-norm: the norm's output is the stream
                names.append(layer_hook(stack, layer, "resid_mid"))
    return names + [layer_hook(stack, layer, "resid_post")]


def stack_hook(stack: str, value: str) -> str:
    """The hook name of a value of the encoder or decoder stack, e.g. ("decoder", "pos_encoding")."""
    if stack not in STACKS or value not in STACK_VALUES:
        raise ValueError(f"no stack hook {stack!r}/{value!r}; stacks encoder, decoder; values {', '.join(STACK_VALUES)}")
    return f"{stack}.{value}"
