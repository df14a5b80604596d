"""The intervals verdicts rest on (explorer/analyses/corpus/intervals.py), each against a bootstrap written out here."""

import numpy as np

from explorer.analyses.corpus.intervals import difference_interval, ratio_intervals, share_interval


def test_a_share_is_the_bootstrap_of_its_zeros_and_ones():
    interval = share_interval(30, 40, "hits", "arcs")
    items = np.array([1.0] * 30 + [0.0] * 10)
    draws = np.random.default_rng(0).integers(0, 40, size=(1000, 40))
    low, high = np.percentile(items[draws].mean(1), [2.5, 97.5])
    assert (interval["mean"], interval["low"], interval["high"], interval["arcs"]) == (0.75, round(low, 4),
                                                                                        round(high, 4), 40)


def test_a_difference_of_shares_resamples_each_on_its_own():
    interval = difference_interval(70, 40, 100, "margin", "arcs")
    ours, baseline = np.r_[np.ones(70), np.zeros(30)], np.r_[np.ones(40), np.zeros(60)]
    rng = np.random.default_rng
    differences = (ours[rng(0).integers(0, 100, size=(1000, 100))].mean(1)
                   - baseline[rng(1).integers(0, 100, size=(1000, 100))].mean(1))
    low, high = np.percentile(differences, [2.5, 97.5])
    assert interval["mean"] == 0.3 and (interval["low"], interval["high"]) == (round(low, 4), round(high, 4))
    assert 0.1 < interval["low"] < 0.3 < interval["high"] < 0.5
    assert difference_interval(0, 0, 0, "margin", "arcs")["low"] is None


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
