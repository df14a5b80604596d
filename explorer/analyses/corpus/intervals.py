"""The uncertainty a card's verdict rests on: a mean (or a share, or a difference of shares) over the items
measured, with its seeded bootstrap 95% interval (percentiles 2.5 and 97.5 over 1,000 resamples with replacement).
The items are what the measurement repeats over: sentences, dependency arcs, random seeds. A verdict is called on the
interval's end, never on the point alone (issue 47: a card may not claim an effect inside its noise)."""

from __future__ import annotations

import numpy as np

RESAMPLES = 1000


def bootstrap_draws(items: int, resamples: int, seed: int = 0) -> np.ndarray:
    """[resamples, items] indices drawn with replacement (numpy, seeded: the same draws every run)."""
    return np.random.default_rng(seed).integers(0, items, size=(resamples, items))


def _interval(what: str, unit: str, mean, draws: np.ndarray | None, count: int, resamples: int, seed: int) -> dict:
    if draws is None:
        return {"what": what, "mean": None, "low": None, "high": None, unit: 0, "resamples": resamples}
    low, high = np.percentile(draws, [2.5, 97.5])
    return {"what": what, "mean": round(float(mean), 4), "low": round(float(low), 4), "high": round(float(high), 4),
            unit: count, "resamples": resamples, "seed": seed}


def mean_interval(values, resamples: int = RESAMPLES, seed: int = 0, what: str = "", unit: str = "sentences") -> dict:
    """The mean of per-item values and its bootstrap 95% interval; NaNs are left out; no value gives an interval
    of None. The count of items is given under `unit` ("sentences": 100)."""
    array = np.asarray([value for value in values if value is not None and not np.isnan(value)], dtype=float)
    if not len(array):
        return _interval(what, unit, None, None, 0, resamples, seed)
    means = array[bootstrap_draws(len(array), resamples, seed)].mean(1)
    return _interval(what, unit, array.mean(), means, len(array), resamples, seed)


def share_interval(hits: int, total: int, what: str, unit: str, resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """A share (hits of total items, each a 0 or a 1) and its interval: the bootstrap of the items themselves."""
    hits = int(round(hits))
    return mean_interval([1.0] * hits + [0.0] * (total - hits), resamples, seed, what, unit)


def difference_interval(hits: int, baseline_hits: int, total: int, what: str, unit: str,
                        resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """hits/total − baseline_hits/total over the same items, and its interval. Which item each hit fell on is not
    kept, so each share is resampled on its own: wider than a paired bootstrap where the two agree item by item,
    so a margin called on its lower end is called conservatively."""
    if not total:
        return _interval(what, unit, None, None, 0, resamples, seed)
    ours = np.zeros(total)
    ours[: int(round(hits))] = 1
    baseline = np.zeros(total)
    baseline[: int(round(baseline_hits))] = 1
    differences = (ours[bootstrap_draws(total, resamples, seed)].mean(1)
                   - baseline[bootstrap_draws(total, resamples, seed + 1)].mean(1))
    return _interval(what, unit, ours.mean() - baseline.mean(), differences, total, resamples, seed)


def ratio_intervals(numerators: np.ndarray, denominators: np.ndarray, resamples: int = RESAMPLES,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap 95% intervals of Σ numerator / Σ denominator over items (axis 0), for many ratios at once
    ([items, ...] each → (low, high) [...]): each resample counts how often it drew each item, so the sums are one
    matrix product, not [resamples, items, ...] in memory."""
    items = len(numerators)
    weights = np.zeros((resamples, items))
    np.add.at(weights, (np.arange(resamples)[:, None], bootstrap_draws(items, resamples, seed)), 1.0)
    flat = lambda values: values.reshape(items, -1)                                     # noqa: E731
    ratios = (weights @ flat(numerators)) / np.maximum(weights @ flat(denominators), 1e-12)
    low, high = np.percentile(ratios, [2.5, 97.5], axis=0)
    shape = numerators.shape[1:]
    return low.reshape(shape), high.reshape(shape)
