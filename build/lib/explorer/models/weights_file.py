"""Reading and writing weights as safetensors (raw tensors only: loading can never run code), in one layout.

Projection weights are stored [out, in], as nn.Linear and Hugging Face store them, so a W_q copied in from
another model has the layout it expects. Files written before 2026-11-22 stored them [in, out] and carry no
layout tag; they are transposed on reading (square matrices would pass a shape check either way, which is why
the layout is a tag in the file and not a guess).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

LAYOUT_KEY, LAYOUT = "weight_layout", "out_in"
# Also matches the same weight's Adam moments in a training state ("adam.exp_avg.<name>").
PROJECTION_WEIGHT = re.compile(r"\.(w_q|w_k|w_v|w_o|w_1|w_2)\.weight$")


@lru_cache(maxsize=32)
def file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """The file's sha256; size and mtime are part of the cache key, so a changed file is hashed again."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_weights(tensors: dict[str, torch.Tensor], path: str | Path) -> None:
    save_file({name: tensor.contiguous() for name, tensor in tensors.items()}, str(path), metadata={LAYOUT_KEY: LAYOUT})


def read_weights(path: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of a file, projection weights [out, in] whatever the file's age. Raises safetensors' and
    the OS's errors for an unreadable file (callers turn them into messages naming the file)."""
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata() or {}
        # safe_open is no dict: it has keys() but cannot be iterated itself.
        tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118  not iterable
    if metadata.get(LAYOUT_KEY) != LAYOUT:
        tensors = {name: tensor.t().contiguous() if PROJECTION_WEIGHT.search(name) and tensor.dim() == 2 else tensor
                   for name, tensor in tensors.items()}
    return tensors
