"""Attention entropy (explorer/analyses/sentence/entropy.py) against scipy's entropy of every row, on planted heads and
on a real trace."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import entropy

from explorer.analyses.sentence.entropy import head_entropy, query_entropy
from explorer.capture.trace import trace_sentence


def test_planted_heads_give_zero_bits_for_one_key_and_log2_n_for_uniform_attention():
    keys = 8
    focused = np.eye(keys)[None]                       # each query on one key
    uniform = np.full((1, keys, keys), 1 / keys)
    pattern = np.concatenate([focused, uniform])      # [heads, query, key]
    visible = np.ones((keys, keys), dtype=bool)
    rows = query_entropy(pattern, visible, normalised=False)
    np.testing.assert_allclose(rows[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(rows[1], np.log2(keys))
    np.testing.assert_allclose(query_entropy(pattern, visible, normalised=True)[1], 1.0)


def test_every_head_is_the_mean_of_scipys_row_entropies(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "Two dogs play in the snow.")
    record = head_entropy(tiny_checkpoint, trace)
    assert set(record.scores) == set(trace.attention)
    for kind, values in trace.attention.items():
        layers, heads = values.pattern.shape[:2]
        expected = np.array([[np.mean([entropy(row, base=2) for row in values.pattern[layer, head]])
                              for head in range(heads)] for layer in range(layers)])
        np.testing.assert_allclose(record.scores[kind], expected, rtol=1e-6, atol=1e-9)


def test_normalised_leaves_out_queries_that_see_one_key(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "Two dogs play in the snow.")
    decoder = trace.attention["decoder"].pattern
    record = head_entropy(tiny_checkpoint, trace, normalised=True)
    visible = trace.masks["decoder"].sum(axis=-1)
    expected = np.mean([entropy(decoder[0, 0, query], base=2) / np.log2(visible[query])
                        for query in range(len(visible)) if visible[query] > 1])
    assert visible[0] == 1 and record.scores["decoder"][0, 0] == pytest.approx(expected)
    assert np.all((record.scores["encoder"] > 0) & (record.scores["encoder"] <= 1 + 1e-9))


def test_a_pruned_head_has_no_entropy(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "A man runs.")
    encoder = trace.attention["encoder"]
    pattern = encoder.pattern.copy()
    pattern[0, 1] = np.nan
    record = head_entropy(tiny_checkpoint, replace(trace, attention={**trace.attention,
                                                                     "encoder": replace(encoder, pattern=pattern)}))
    assert np.isnan(record.scores["encoder"][0, 1]) and np.isfinite(record.scores["encoder"][0, 0])
