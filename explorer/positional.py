"""The positional information as the Internals page shows it: which kind a model has, sin/cos halves, and how
similar positions are to each other."""

from __future__ import annotations

import numpy as np

from explorer.open_model import is_hugging_face


def positional_style(checkpoint) -> str:
    """"sinusoidal" (ours: sin and cos interleaved, Vaswani et al.), "sinusoidal-halves" (Marian: all the sin
    dimensions, then all the cos ones) or "learned" (BART, BERT, RoBERTa, GPT-2: a trained table)."""
    if not is_hugging_face(checkpoint):
        return "sinusoidal"
    return "sinusoidal-halves" if checkpoint.model.family == "marian" else "learned"


def position_similarity(positional: np.ndarray, cosine: bool = False) -> np.ndarray:
    """Dot products (or cosine similarities) between the encodings of every pair of positions: [P, P]."""
    if cosine:
        positional = positional / np.maximum(np.linalg.norm(positional, axis=1, keepdims=True), 1e-12)
    return positional @ positional.T


def sin_cos_halves(positional: np.ndarray, style: str = "sinusoidal") -> np.ndarray:
    """PE's columns as [sin dims | cos dims], so the two halves are visible (Marian's already are)."""
    if style == "sinusoidal-halves":
        return positional
    return np.concatenate([positional[:, 0::2], positional[:, 1::2]], axis=1)


def embedding_steps(checkpoint) -> tuple[str, str, str]:
    """How the model turns tokens into the first layer's input, as three panel titles."""
    if not is_hugging_face(checkpoint):
        return ("token embedding × √d_model", "+ positional encoding", "= input to layer 0")
    family, config = checkpoint.model.family, checkpoint.model.model.config
    scaled = " × √d_model" if getattr(config, "scale_embedding", False) else ""
    if family == "marian":
        return (f"token embedding{scaled}", "+ sinusoidal position", "= input to layer 0")
    if family in ("bart", "mbart"):
        return (f"token embedding{scaled}", "+ learned position", "→ layer norm = input to layer 0")
    if family in ("bert", "roberta"):
        return ("token embedding", "+ learned position (+ segment)", "→ layer norm = input to layer 0")
    return ("token embedding", "+ learned position", "= input to layer 0")
