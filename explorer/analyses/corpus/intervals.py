"""The uncertainty a card's verdict rests on: a mean (or a share, or a difference of shares) over the items
measured, with its 95% interval. The items are what the measurement repeats over: sentences, dependency arcs, random
seeds. A verdict is called on the interval's end, never on the point alone (issue 47: a card may not claim an effect
inside its noise).

- a mean, and a difference of two shares: scipy's seeded percentile bootstrap (scipy.stats.bootstrap, 1,000
  resamples with replacement; the two shares of a difference resampled each on its own);
- a share of items (hits of a total): Wilson's score interval (scipy.stats.binomtest), right where a bootstrap of
  zeros and ones is not (a share of 0 or 1 gets an interval of its own width, not a point);
- many ratios of sums at once (roles.py's per-head shares over sentences): written out here, since scipy's bootstrap
  would hold [resamples, items, heads] in memory; each resample counts how often it drew each item instead.
"""

from __future__ import annotations

import numpy as np

from explorer.analyses.records import PERCENTILE, RESAMPLES, WILSON, Interval


def bootstrap_draws(items: int, resamples: int, seed: int = 0) -> np.ndarray:
    """[resamples, items] indices drawn with replacement (numpy, seeded: the same draws every run)."""
    return np.random.default_rng(seed).integers(0, items, size=(resamples, items))


def rounded(value) -> float:
    return round(float(value), 4)


def percentile_bootstrap(samples: tuple[np.ndarray, ...], statistic, resamples: int, seed: int) -> tuple[float, float]:
    """scipy's seeded percentile bootstrap of a statistic of one or more samples (each resampled on its own)."""
    if all(np.ptp(sample) == 0 for sample in samples):          # nothing varies: every resample gives the point
        value = float(statistic(*samples, axis=-1))
        return value, value
    # Imported here: roles.py imports this module at the app's start, and scipy.stats takes ~1 s.
    from scipy.stats import bootstrap

    result = bootstrap(samples, statistic, n_resamples=resamples, confidence_level=0.95, method="percentile",
                       rng=np.random.default_rng(seed), vectorized=True, paired=False)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def mean_interval(values, resamples: int = RESAMPLES, seed: int = 0, what: str = "", unit: str = "sentences"
                  ) -> Interval:
    """The mean of per-item values and its bootstrap 95% interval; NaNs and Nones are left out; no value gives an
    interval of None."""
    array = np.asarray([value for value in values if value is not None and not np.isnan(value)], dtype=float)
    if not len(array):
        return Interval(what, None, None, None, 0, unit, PERCENTILE, resamples, seed)
    low, high = percentile_bootstrap((array,), np.mean, resamples, seed)
    return Interval(what, rounded(array.mean()), rounded(low), rounded(high), len(array), unit, PERCENTILE,
                    resamples, seed)


def share_interval(hits: int, total: int, what: str, unit: str) -> Interval:
    """A share (hits of total items) and its Wilson score 95% interval."""
    hits = int(round(hits))
    if not total:
        return Interval(what, None, None, None, 0, unit, WILSON, None, None)
    from scipy.stats import binomtest

    bounds = binomtest(hits, total).proportion_ci(0.95, method="wilson")
    return Interval(what, rounded(hits / total), rounded(bounds.low), rounded(bounds.high), total, unit, WILSON,
                    None, None)


def difference_interval(hits: int, baseline_hits: int, total: int, what: str, unit: str,
                        resamples: int = RESAMPLES, seed: int = 0) -> Interval:
    """hits/total − baseline_hits/total over the same items, and its interval. Which item each hit fell on is not
    kept, so each share is resampled on its own: wider than a paired bootstrap where the two agree item by item,
    so a margin called on its lower end is called conservatively."""
    if not total:
        return Interval(what, None, None, None, 0, unit, PERCENTILE, resamples, seed)
    ours = np.zeros(total)
    ours[: int(round(hits))] = 1
    baseline = np.zeros(total)
    baseline[: int(round(baseline_hits))] = 1
    low, high = percentile_bootstrap((ours, baseline), lambda a, b, axis: a.mean(axis) - b.mean(axis),
                                     resamples, seed)
    return Interval(what, rounded(ours.mean() - baseline.mean()), rounded(low), rounded(high), total, unit,
                    PERCENTILE, resamples, seed)


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
