"""An image through an image classifier (a Vision Transformer): every layer's and head's attention over the class
token and the patches, the positional table, and the class probabilities, in the same Trace a sentence gets.

The trace's source tokens are the class token and the patches row by row (`r0c0`, `r0c1` …; the model's
`grid` says how they sit in 2-D); its output is ClassProbabilities: the class the class token chose, with the top
classes' probabilities, and the pixels (`trace.image`), so the figures can draw attention over the image itself.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from explorer.capture.head_sets import HeadSpec, format_heads, head_mask
from explorer.capture.input_kinds import IMAGE, input_kind
from explorer.capture.inputs import InputError
from explorer.capture.trace import (
    ClassProbabilities,
    Trace,
    captured_attention,
    captured_masks,
    captured_stacks,
    step_distributions,
)
from explorer.models.interface import AttentionModel, ImageInput

CLASS_TITLE = ImageInput.output_title


def checked_image(model: AttentionModel, image) -> np.ndarray:
    """The image as [height, width] float32 in 0 … 1, or InputError saying what is wrong with it."""
    if input_kind(model) is not IMAGE:
        raise InputError(f"{model.name} reads {input_kind(model).reads}, not images")
    shape = cast(ImageInput, model).image_shape         # what input_kind calls IMAGE
    pixels = np.asarray(image, dtype=np.float32)
    if pixels.ndim != 2 or pixels.shape != tuple(shape):
        raise InputError(f"an image of shape {list(pixels.shape)}; {model.name} reads one of "
                         f"{shape[0]}×{shape[1]} pixels")
    if not np.isfinite(pixels).all() or pixels.min() < 0 or pixels.max() > 1:
        raise InputError("the image's pixels must lie between 0 (blank) and 1 (ink)")
    return pixels


@torch.no_grad()
def trace_image(model: AttentionModel, image, pruned: list[HeadSpec] | None = None, top_k: int = 10,
                description: str = "an image") -> Trace:
    """Classify one image and capture every attention and positional value. pruned: heads masked throughout."""
    pixels = checked_image(model, image)
    reader = cast(ImageInput, model)                    # checked_image refuses any other
    gates = head_mask(pruned or [], model)
    logits, cache = model.run_with_cache(reader.image_batch(torch.from_numpy(pixels)), None, "*", head_mask=gates)
    attention, stacked = captured_attention(cache, model, gates), captured_stacks(cache)
    assert logits is not None                       # an image classifier's forward gives its logits
    log_probs = torch.log_softmax(logits[0, :1].float(), -1)        # the class token's row: the prediction
    chosen = int(log_probs[0].argmax())
    names = lambda ids: [reader.class_names[i] for i in ids]         # noqa: E731
    [step] = step_distributions(log_probs, [chosen], names, top_k)
    return Trace(
        text=description, source_ids=[], target_ids=[], source_tokens=reader.token_labels(), target_tokens=[],
        truncated=False, pruned=format_heads(pruned or []), d_k=model.d_k, attention=attention,
        masks=captured_masks(cache, model, attention), positional=stacked["pos_encoding"],
        embeddings=stacked["embed"], inputs=stacked["input"], output=ClassProbabilities(CLASS_TITLE, step, pixels))
