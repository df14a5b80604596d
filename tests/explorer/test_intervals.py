"""The intervals verdicts rest on (explorer/analyses/corpus/intervals.py), each against a bootstrap or Wilson's formula
written out here (a bootstrap with other seeds: equal up to Monte Carlo error)."""

import subprocess
import sys

import numpy as np
import pytest

from explorer.analyses.corpus.intervals import Interval, difference_interval, ratio_intervals, share_interval


def test_a_share_is_wilsons_score_interval():
    interval = share_interval(30, 40, "hits", "arcs")
    p, n, z = 30 / 40, 40, 1.959963984540054                   # Wilson (1927), written out
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert (interval.mean, interval.low, interval.high) == (0.75, round(centre - half, 4), round(centre + half, 4))
    assert interval.to_json()["arcs"] == 40 and interval.to_json()["method"] == "Wilson score"
    every = share_interval(12, 12, "hits", "sentences")        # all hits: not a point, as a bootstrap would give
    assert every.high == 1.0 and every.low < 0.8
    assert share_interval(0, 0, "hits", "arcs").low is None


def test_a_difference_of_shares_resamples_each_on_its_own():
    interval = difference_interval(70, 40, 100, "margin", "arcs", resamples=20_000)
    ours, baseline = np.r_[np.ones(70), np.zeros(30)], np.r_[np.ones(40), np.zeros(60)]
    rng = np.random.default_rng
    differences = (ours[rng(11).integers(0, 100, size=(20_000, 100))].mean(1)
                   - baseline[rng(12).integers(0, 100, size=(20_000, 100))].mean(1))
    low, high = np.percentile(differences, [2.5, 97.5])
    assert interval.mean == 0.3 and abs(interval.low - low) < 0.01 and abs(interval.high - high) < 0.01
    assert 0.1 < interval.low < 0.3 < interval.high < 0.5
    assert difference_interval(0, 0, 0, "margin", "arcs").low is None
    assert Interval.from_json(interval.to_json()) == interval          # the JSON edge keeps every field


def test_ratio_intervals_equal_a_resampling_of_whole_sentences():
    rng = np.random.default_rng(5)
    hits = rng.integers(0, 6, size=(30, 2, 3)).astype(float)          # per sentence, per head: queries at an offset
    queries = hits + rng.integers(1, 5, size=(30, 2, 3))
    low, high = ratio_intervals(hits, queries, resamples=300, seed=2)
    draws = np.random.default_rng(2).integers(0, 30, size=(300, 30))
    ratios = np.stack([hits[d].sum(0) / queries[d].sum(0) for d in draws])
    expected_low, expected_high = np.percentile(ratios, [2.5, 97.5], axis=0)
    np.testing.assert_allclose(low, expected_low)
    np.testing.assert_allclose(high, expected_high)
    assert (low < hits.sum(0) / queries.sum(0)).all() and (hits.sum(0) / queries.sum(0) < high).all()


@pytest.mark.slow
def test_scipy_stats_loads_only_when_an_interval_is_computed():
    """roles.py imports this module (ratio_intervals, numpy only) at the app's start; scipy.stats (~1 s) is imported
    when a card's interval is first computed."""
    code = ("import sys, explorer.analyses.corpus.roles; "
            "assert 'scipy.stats' not in sys.modules, 'scipy.stats imported at start-up'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-500:]
