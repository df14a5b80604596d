"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", ACL, §3).

The layers of one self-attention kind become a flow network: a node per (layer, position) for the input
(layer 0) and for each layer's output, and an edge from position q after layer l+1 to position k after layer l
whose capacity is the head-averaged attention with the residual connection, 0.5·A + 0.5·I with rows renormalised
(the same matrix that attention rollout multiplies, explorer/rollout.py). The flow of input token k into position q
after the last layer is the maximum flow from that output node to that input node; each output node's flows are
then divided by their sum, as the authors do, so that a row sums to 1. Returns [query, key].

Cost: one max-flow per (query, key) pair, n² of them, each on a graph of (layers+1)·n nodes and layers·n² edges.
scipy's Dinic (C) needs integer capacities, so capacities are scaled by CAPACITY_SCALE = 10⁶ and rounded: each
edge is off by at most 5·10⁻⁷, a flow by at most that times the edges of a cut. tests/explorer/test_flow.py
compares with networkx on the unrounded floats. Pairs that no path joins (a causal decoder's future) are skipped:
their flow is 0.
MAX_FLOW_TOKENS is chosen from measured times (README, "Attention flow and rollout").
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from explorer.inputs import InputError
from explorer.rollout import head_average

CAPACITY_SCALE = 10**6
# h8, 3 layers, this 2-core machine quiet: 0.005 s at 5 tokens, 0.08 s at 20, 1.0 s at 45, 2.0 s at 60 (≈ 7 s when
# shared with other runs; README, "Attention flow and rollout")
MAX_FLOW_TOKENS = 60


def residual_attention(pattern: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
    """[layers, heads, q, k] → [layers, q, k]: heads averaged (live ones only, when given), 0.5·A + 0.5·I, rows
    renormalised."""
    length = pattern.shape[-1]
    mixed = 0.5 * head_average(pattern, live) + 0.5 * np.eye(length)
    return mixed / mixed.sum(axis=-1, keepdims=True)


def flow_network(mixed: np.ndarray) -> csr_array:
    """The layer graph with integer capacities: node layer·n + position, edges from layer l+1 down to layer l."""
    layers, length, _ = mixed.shape
    nodes = (layers + 1) * length
    rows, columns, capacities = [], [], []
    for layer in range(layers):
        scaled = np.rint(mixed[layer] * CAPACITY_SCALE).astype(np.int64)
        query, key = np.nonzero(scaled)
        rows.append((layer + 1) * length + query)
        columns.append(layer * length + key)
        capacities.append(scaled[query, key])
    return csr_array((np.concatenate(capacities).astype(np.int32),
                      (np.concatenate(rows), np.concatenate(columns))), shape=(nodes, nodes))


def check_length(length: int) -> None:
    if length > MAX_FLOW_TOKENS:
        raise InputError(f"Attention flow takes at most {MAX_FLOW_TOKENS} tokens (this sentence has {length}): it "
                         f"solves one max-flow problem per pair of tokens, and its time grows as the fourth power "
                         f"of the length. Rollout shows the same layers at any length.")


def attention_flow(pattern: np.ndarray, rows: Sequence[int] | None = None, live: np.ndarray | None = None) -> np.ndarray:
    """[layers, heads, q, k] of one self-attention kind → [query, key]: each input token's share of the maximum
    flow into each position after the last layer (rows sum to 1). rows: only these queries' rows, [len(rows), key]
    (a row costs n max-flows, so asking for fewer saves time). live: [layers, heads], 0 for a pruned head."""
    if pattern.ndim != 4 or pattern.shape[-1] != pattern.shape[-2]:
        raise ValueError(f"attention flow needs self-attention [layers, heads, q, q], got shape {pattern.shape}")
    layers, _, length, _ = pattern.shape
    check_length(length)
    mixed = residual_attention(np.asarray(pattern, dtype=np.float64), live)
    graph = flow_network(mixed)                       # built once; each pair changes only source and sink
    reachable = np.eye(length, dtype=bool)            # which inputs any path reaches from each output
    for layer in range(layers):
        reachable = (mixed[layer] > 0).astype(np.int64) @ reachable.astype(np.int64) > 0
    queries = list(range(length)) if rows is None else [int(row) for row in rows]
    flows = np.zeros((len(queries), length))
    for number, query in enumerate(queries):
        source = layers * length + query
        for key in np.flatnonzero(reachable[query]):
            flows[number, key] = maximum_flow(graph, source, int(key)).flow_value
    flows /= CAPACITY_SCALE
    return flows / flows.sum(axis=-1, keepdims=True)
