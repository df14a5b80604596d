"""What a Lesson step is made of (its numbers, its link to the page that shows it in full), the steps' titles and
the glossary terms each step links; the Lesson itself (explorer/teaching/lesson.py) fills them for one sentence."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np

# Vaswani et al. 2017, the base model: what each step compares this model with.
PAPER = {"d_model": 512, "layers": 6, "heads": 8, "d_k": 64}
# Dosovitskiy et al. 2021, ViT-Base: what an image lesson compares its model with.
VIT_BASE = {"d_model": 768, "layers": 12, "heads": 12, "d_k": 64, "patch": 16, "image": 224}
SHOWN_VALUES = 4        # the first values of a vector written out in a step's numbers


@dataclass(frozen=True)
class Focus:
    """What the lesson follows: one word (a position of the stack that reads the input), the key its scores are
    read at, one layer and head of that stack, and one output step of the decoder."""

    word: int
    key: int
    layer: int
    head: int
    step: int


@dataclass(frozen=True)
class Number:
    """One number a step states; `name` is stable (tests and links read it), `value` a float, a text, or a list of
    floats (a vector's first values)."""

    name: str
    label: str
    value: float | str | list[float]


@dataclass(frozen=True)
class DeepLink:
    """The page (and its choices, as URL parameters) that shows a step in full, on the same sentence."""

    page: str                   # the page script, e.g. "internals.py"
    title: str                  # "Internals → Q, K, V walkthrough"
    parameters: dict[str, str] = field(default_factory=dict)


@dataclass
class Step:
    slug: str
    title: str
    text: str                   # one short paragraph (markdown)
    numbers: list[Number]
    figure: object = None       # a plotly figure, or None when `tokens` shows the step
    tokens: list[str] | None = None     # the step's figure as a row of token chips (the pieces, the output so far)
    marked: int | None = None           # the chip to highlight
    link: DeepLink | None = None
    differs: str = ""           # where this model differs from the paper, in words ("" when it does not)


TITLES = {
    "sentence": "Your sentence, as pieces",
    "embedding": "Embedding + positional encoding",
    "qkv": "Q, K and V of one word",
    "scores": "Scores: q · k",
    "scale": "Scaled: ÷ √d_k",
    "softmax": "Softmax: the attention weights",
    "values": "Weighted sum of the values: z",
    "matrix": "Every word at once: softmax(QKᵀ/√d_k)·V",
    "heads": "Every head, concatenated",
    "output": "W_O: back to d_model",
    "block": "Residual, layer norm and feed-forward",
    "layers": "The encoder's layers",
    "masked": "Decoder: masked self-attention",
    "cross": "Encoder–decoder attention",
    "probabilities": "Linear + softmax: the next word's probabilities",
    "next": "The chosen word, and the loop",
    "training": "Training: one-hot target, cross-entropy loss",
    # an image through a Vision Transformer (explorer/teaching/image_lesson.py)
    "image": "Your image, as patches",
    "classify": "The class token: linear + softmax",
}


# Each step's terms, as the glossary (explorer/teaching/glossary.py) names them: the page links them under the step.
STEP_TERMS = {
    "sentence": ("piece", "token", "special token"),
    "embedding": ("embedding", "d_model", "positional encoding"),
    "qkv": ("query, key, value", "head", "layer norm", "d_k"),
    "scores": ("query, key, value", "scaled dot-product attention"),
    "scale": ("d_k", "scaled dot-product attention", "softmax"),
    "softmax": ("softmax", "attention weight", "mask"),
    "values": ("z", "attention weight"),
    "matrix": ("scaled dot-product attention", "query, key, value", "softmax", "z"),
    "heads": ("multi-head attention", "head", "z"),
    "output": ("W_O", "residual stream", "layer norm", "feed-forward layer"),
    "block": ("residual stream", "layer norm", "feed-forward layer"),
    "layers": ("layer", "encoder", "self-attention", "head average"),
    "masked": ("decoder", "look-ahead mask", "self-attention", "teacher forcing"),
    "cross": ("cross-attention", "encoder", "decoder"),
    "probabilities": ("logits", "softmax", "entropy"),
    "next": ("greedy decoding", "beam search", "special token"),
    "training": ("one-hot", "cross-entropy", "loss", "teacher forcing"),
    "image": ("patch", "class token", "Vision Transformer"),
    "classify": ("class token", "logits", "softmax"),
}

# The step list's labels: short, so all of them fit a 1024-pixel projector's column in a few rows.
SHORT_TITLES = {"sentence": "Pieces", "embedding": "Embedding + position", "qkv": "Q, K, V", "scores": "q · k",
                "scale": "÷ √d_k", "softmax": "Softmax", "values": "z = Σ weight × v", "matrix": "Matrix form",
                "heads": "All heads",
                "output": "W_O", "block": "Add & norm, FFN", "layers": "Layers", "masked": "Masked self-attention",
                "cross": "Cross-attention",
                "probabilities": "Linear + softmax", "next": "Next word, loop", "training": "Training",
                "image": "Patches", "classify": "Class"}


def vector(values: np.ndarray) -> list[float]:
    return [float(v) for v in values[:SHOWN_VALUES]]


def quoted(token: str) -> str:
    """A piece in a step's markdown, taken literally: a sentence's `*`, `[`, `<` or `$` never becomes markup.
    Right-to-left text (Arabic, Hebrew) is isolated (U+2068 … U+2069), so that it cannot carry the quotes and the
    commas around it to its own side."""
    escaped = re.sub(r"([\\`*_\[\]$<>|~#])", r"\\\1", token)
    return "“" + (f"\u2068{escaped}\u2069" if right_to_left(token) else escaped) + "”"


def right_to_left(text: str) -> bool:
    return any(unicodedata.bidirectional(character) in ("R", "AL") for character in text)


def word_mark(tokens: list[str]) -> str:
    """How the tokenizer marks where words start (SentencePiece, byte-level BPE) or continue (WordPiece)."""
    if any(token.startswith("▁") for token in tokens):
        return "▁ marks a piece that starts a word."
    if any(token.startswith("##") for token in tokens):
        return "## marks a piece that continues the word before it."
    return ""


def followed(words: list[str], focus: Focus, head: str) -> dict[str, str]:
    """The link parameters of what a lesson follows, for its deep views: the word (a piece's position, `query=`;
    as a word, `word=it` or `word=the~2`, where the piece starts one), the head (`kind.layer.head`), the output
    step."""
    parameters = {"query": str(focus.word), "head": head, "step": str(focus.step)}
    piece = words[focus.word]
    word = piece.removeprefix("▁")
    if piece.startswith("▁") and word.isalpha():
        earlier = sum(other.startswith("▁") and other.removeprefix("▁").lower() == word.lower()
                      for other in words[: focus.word])
        parameters["word"] = word if not earlier else f"{word}~{earlier + 1}"
    return parameters
