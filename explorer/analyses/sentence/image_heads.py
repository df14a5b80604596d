"""Head importance and pruning for an image classifier, on the held-out digits: accuracy with some heads switched
off, each head's importance after Michel et al. 2019 (the expected |∂ loss / ∂ gate| of a gate of 1 on its z,
one gate per image, averaged over the held-out images), and the accuracy as heads are pruned least important
first. The same head gates as the text models' (models/hooks.py), so a pruned head here is a pruned head
everywhere."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from explorer.capture.head_sets import HeadSpec, head_mask
from explorer.models.digits import held_out
from explorer.models.hooks import model_run
from explorer.models.interface import AttentionModel


@dataclass(frozen=True)
class Scored:
    accuracy: float         # share of the held-out images classified right
    loss: float             # mean cross-entropy of the class token's logits
    wrong: int


def held_out_tensors() -> tuple[torch.Tensor, torch.Tensor]:
    digits = held_out()
    return torch.tensor(digits.images), torch.tensor(digits.labels)


@torch.no_grad()
def held_out_score(model: AttentionModel, pruned: list[HeadSpec] = ()) -> Scored:
    images, labels = held_out_tensors()
    with model_run(head_mask=head_mask(pruned, model)):
        logits = model.forward(model.image_batch(images))[:, 0].float()
    right = logits.argmax(-1) == labels
    return Scored(float(right.float().mean()), float(F.cross_entropy(logits, labels)), int((~right).sum()))


def image_head_importance(model: AttentionModel) -> np.ndarray:
    """[layers, heads]: mean over the held-out images of |∂ loss / ∂ gate| (Michel et al. 2019, eq. 2)."""
    images, labels = held_out_tensors()
    layers = model.layers("encoder")
    gates = torch.ones(layers, len(images), model.heads, requires_grad=True)
    with torch.enable_grad(), model_run(head_mask={"encoder": gates}):
        logits = model.forward(model.image_batch(images))[:, 0].float()
        loss = F.cross_entropy(logits, labels, reduction="sum")
    (gradient,) = torch.autograd.grad(loss, gates)
    return gradient.abs().mean(dim=1).cpu().numpy()


def pruning_order(importance: np.ndarray) -> list[HeadSpec]:
    """Every head, least important first (ties by layer, then head)."""
    layers, heads = importance.shape
    every = [HeadSpec("encoder", layer, head) for layer in range(layers) for head in range(heads)]
    return sorted(every, key=lambda spec: (importance[spec.layer, spec.head], spec.layer, spec.head))


def image_pruning_curve(model: AttentionModel, importance: np.ndarray, steps: int = 8) -> list[dict]:
    """Held-out accuracy with 0, then more and more of the heads pruned, least important first: one row a step."""
    order = pruning_order(importance)
    counts = sorted({round(len(order) * step / steps) for step in range(steps + 1)})
    rows = []
    for count in counts:
        score = held_out_score(model, order[:count])
        rows.append({"pruned": count, "share pruned": count / len(order), "accuracy": score.accuracy,
                     "loss": score.loss})
    return rows
