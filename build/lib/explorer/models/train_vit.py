"""Train the bundled Vision Transformer on scikit-learn's handwritten digits (models/digits.py).

    python -m explorer.models.train_vit --out models/digits-vit

A fixed recipe, no early stopping (the held-out split is read once, at the end, for the model card): AdamW,
one-cycle learning rate, label smoothing 0.1, and each training image shifted by up to one pixel in each
direction (the digits are not centred alike). One CPU thread: about 2 minutes.
"""

from __future__ import annotations

import argparse
import math
import platform
import time

import torch
import torch.nn.functional as F

from .digits import HELD_OUT_SHARE, SPLIT_SEED, digit_splits
from .vision_transformer import VisionTransformer, VitConfig, save_classifier


def shifted(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each image moved by -1, 0 or +1 pixel down and right, the border filled with blank paper (0)."""
    padded = F.pad(images, (1, 1, 1, 1))
    height, width = images.shape[1:]
    rows, columns = torch.randint(0, 3, (2, len(images)), generator=generator)
    return torch.stack([padded[i, r:r + height, c:c + width] for i, (r, c) in enumerate(zip(rows, columns))])


@torch.no_grad()
def accuracy(model: VisionTransformer, images: torch.Tensor, labels: torch.Tensor) -> float:
    model.eval()
    return (model(images)[:, 0].argmax(-1) == labels).float().mean().item()


def train(config: VitConfig, epochs: int, batch_size: int, learning_rate: float, seed: int) -> tuple[VisionTransformer, dict]:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    training, held_out = digit_splits()
    images, labels = torch.tensor(training.images), torch.tensor(training.labels)
    model = VisionTransformer(config)
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.05)
    steps = epochs * math.ceil(len(images) / batch_size)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, learning_rate, total_steps=steps, pct_start=0.1)
    started = time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(images), generator=generator)
        for start in range(0, len(images), batch_size):
            batch = order[start:start + batch_size]
            logits = model(shifted(images[batch], generator))[:, 0]
            loss = F.cross_entropy(logits, labels[batch], label_smoothing=0.1)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
        if epoch % 10 == 0:
            print(f"epoch {epoch}: training loss {loss.item():.3f}, training accuracy "
                  f"{accuracy(model, images, labels):.4f} ({time.perf_counter() - started:.0f} s)", flush=True)
    seconds = time.perf_counter() - started
    test = accuracy(model, torch.tensor(held_out.images), torch.tensor(held_out.labels))
    info = {
        "description": f"Vision Transformer on scikit-learn's 8×8 handwritten digits: {config.patch_size}×"
                       f"{config.patch_size} patches, {config.encoder_layers} layers × {config.heads} heads, "
                       f"{test:.1%} on the held-out digits",
        "class_names": [str(digit) for digit in range(10)],
        "data": {"name": "scikit-learn load_digits (UCI optical recognition of handwritten digits)",
                 "training_images": len(images), "held_out_images": len(held_out.labels),
                 "split": f"stratified, {HELD_OUT_SHARE:.0%} held out, seed {SPLIT_SEED}"},
        "training": {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate, "seed": seed,
                     "optimiser": "AdamW, weight decay 0.05, one-cycle schedule (10% warm-up)",
                     "augmentation": "shift by up to one pixel each way", "label_smoothing": 0.1,
                     "seconds": round(seconds, 1), "threads": torch.get_num_threads(),
                     "machine": platform.processor() or platform.machine()},
        "scores": {"held_out_accuracy": round(test, 4),
                   "held_out_errors": int(round((1 - test) * len(held_out.labels)))},
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    return model, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the model's folder (config.json, model.safetensors)")
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--patch-size", type=int, default=2)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = VitConfig(patch_size=args.patch_size, encoder_layers=args.layers, heads=args.heads, d_model=args.d_model,
                       d_ff=2 * args.d_model)
    model, info = train(config, args.epochs, args.batch_size, args.learning_rate, args.seed)
    save_classifier(args.out, model, info)
    print(f"{args.out}: held-out accuracy {info['scores']['held_out_accuracy']:.4f} in {info['training']['seconds']} s")


if __name__ == "__main__":
    main()
