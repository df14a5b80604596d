"""The handwritten digits that ship inside scikit-learn (UCI's optical digits: 1,797 grey images of 8×8 pixels, 16
levels, from 43 writers), split once, the same way everywhere: 80% to train on, 20% held out (stratified by
digit, seed 0). Nothing is downloaded."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

HELD_OUT_SHARE, SPLIT_SEED = 0.2, 0


@dataclass(frozen=True)
class Digits:
    images: np.ndarray      # [n, 8, 8] float32, 0 … 1
    labels: np.ndarray      # [n] int64, 0 … 9


@cache
def digit_splits() -> tuple[Digits, Digits]:
    """(training, held out)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    images = (data.images / 16.0).astype(np.float32)
    train_x, test_x, train_y, test_y = train_test_split(images, data.target, test_size=HELD_OUT_SHARE,
                                                        random_state=SPLIT_SEED, stratify=data.target)
    return Digits(train_x, train_y.astype(np.int64)), Digits(test_x, test_y.astype(np.int64))


def held_out() -> Digits:
    return digit_splits()[1]
