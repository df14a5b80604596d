"""Attention flow (Abnar & Zuidema 2020) against max-flows computed independently: networkx on the unrounded
capacities of a hand-built layer graph, and by hand where the paths are disjoint."""

import networkx as nx
import numpy as np
import pytest

from explorer.analyses.sentence.flow import MAX_FLOW_TOKENS, attention_flow, residual_attention
from explorer.analyses.sentence.rollout import attention_rollout
from explorer.capture.inputs import InputError


def random_pattern(layers: int, heads: int, length: int, seed: int = 0, causal: bool = False) -> np.ndarray:
    weights = np.random.default_rng(seed).dirichlet(np.full(length, 0.4), size=(layers, heads, length))
    if causal:
        weights = np.tril(weights)
        weights /= weights.sum(-1, keepdims=True)
    return weights


def networkx_flow(pattern: np.ndarray) -> np.ndarray:
    """The authors' recipe written out with networkx: the layer graph, one max-flow per (output, input) pair on
    float capacities, each output's row divided by its sum."""
    layers, _, length, _ = pattern.shape
    mixed = pattern.mean(axis=1) + np.eye(length)            # A + I, rows renormalised = 0.5 A + 0.5 I
    mixed /= mixed.sum(-1, keepdims=True)
    graph = nx.DiGraph()
    for layer in range(layers):
        for q in range(length):
            for k in range(length):
                graph.add_edge((layer + 1, q), (layer, k), capacity=float(mixed[layer, q, k]))
    flows = np.array([[nx.maximum_flow_value(graph, (layers, q), (0, k)) for k in range(length)]
                      for q in range(length)])
    return flows / flows.sum(-1, keepdims=True)


@pytest.mark.parametrize("layers, length", [(2, 6), (3, 6), (5, 7)])
def test_flow_equals_networkx(layers, length):
    """Two layers (no middle edges in a pair's graph), three, and five with more pairs than one scipy call solves."""
    pattern = random_pattern(layers=layers, heads=4, length=length)
    # scaled-integer capacities (1e-6): agreement to well within 1e-4 after normalising
    np.testing.assert_allclose(attention_flow(pattern), networkx_flow(pattern), atol=1e-4)


def test_causal_decoder_flow_equals_networkx_and_never_reaches_the_future():
    pattern = random_pattern(layers=3, heads=2, length=5, seed=3, causal=True)
    flow = attention_flow(pattern)
    np.testing.assert_allclose(flow, networkx_flow(pattern), atol=1e-4)
    assert np.all(np.triu(flow, 1) == 0)
    np.testing.assert_allclose(flow.sum(-1), 1)


def test_two_token_flow_by_hand():
    """Two tokens, two layers: the paths q → j → k through the two middle nodes share no edge, so the max-flow is
    Σ_j min(capacity q→j, capacity j→k)."""
    pattern = random_pattern(layers=2, heads=3, length=2, seed=7)
    lower, upper = residual_attention(pattern)
    by_hand = np.array([[sum(min(upper[q, j], lower[j, k]) for j in range(2)) for k in range(2)] for q in range(2)])
    np.testing.assert_allclose(attention_flow(pattern), by_hand / by_hand.sum(-1, keepdims=True), atol=1e-5)


def test_one_layer_flow_is_the_residual_attention_itself():
    """With one layer each input reaches each output by one edge: flow, rollout and 0.5 A + 0.5 I agree."""
    pattern = random_pattern(layers=1, heads=2, length=7, seed=1)
    np.testing.assert_allclose(attention_flow(pattern), attention_rollout(pattern)[-1], atol=1e-5)


def test_beyond_the_cap_a_clear_message():
    pattern = np.full((1, 1, MAX_FLOW_TOKENS + 1, MAX_FLOW_TOKENS + 1), 1 / (MAX_FLOW_TOKENS + 1))
    with pytest.raises(InputError, match=f"at most {MAX_FLOW_TOKENS} tokens"):
        attention_flow(pattern)


def test_chosen_rows_equal_those_rows_of_the_whole_flow():
    pattern = random_pattern(layers=3, heads=2, length=6, seed=5)
    np.testing.assert_allclose(attention_flow(pattern, [4, 1]), attention_flow(pattern)[[4, 1]])
