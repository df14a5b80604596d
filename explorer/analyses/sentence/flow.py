"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", ACL, §3).

The layers of one self-attention kind become a flow network: a node per (layer, position) for the input (layer 0) and
for each layer's output, and an edge from position q after layer l+1 to position k after layer l whose capacity is the
head-averaged attention with the residual connection, 0.5·A + 0.5·I with rows renormalised (the same matrix that
attention rollout multiplies, explorer/analyses/sentence/rollout.py). The flow of input token k into position q after
the last layer is the maximum flow from that output node to that input node; each output node's flows are then divided
by their sum, as the authors do, so that a row sums to 1. Returns [query, key].

Cost: one max-flow per (query, key) pair, n² of them, each on a graph of (layers−1)·n + 2 nodes and about
(layers−2)·n² + 2n edges (only the query at the top, only the key at the bottom), PAIRS_PER_CALL pairs solved side
by side in one scipy call (max_flows). scipy's Dinic (C) needs integer capacities, so capacities are scaled by
CAPACITY_SCALE = 10⁶ and rounded: each edge is off by at most 5·10⁻⁷, a flow by at most that times the edges of a
cut. tests/explorer/test_flow.py compares with networkx on the unrounded floats. Pairs that no path joins (a causal
decoder's future) are skipped: their flow is 0.
MAX_FLOW_TOKENS is chosen from measured times (docs/analyses.md, "Attention flow and rollout").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from explorer.analyses.sentence.rollout import head_average
from explorer.capture.inputs import InputError

CAPACITY_SCALE = 10**6
# (query, key) pairs solved in one scipy call (max_flows). Measured on h8's encoder at 45 words (49 tokens): 4 pairs
# a call 0.32 s, 16 0.25 s, 50 0.29 s, 400 0.61 s (the bigger graph needs more of Dinic's phases); one a call 0.54 s.
PAIRS_PER_CALL = 16
# Chosen when pairs were solved one a call (h8, 3 layers, quiet: 1.0 s at 45 tokens, 2.0 s at 60; docs/analyses.md, "Attention
# flow and rollout"); 16 pairs a call take 0.25 s at 49 tokens (benchmarks/explain.py).
MAX_FLOW_TOKENS = 60


def residual_attention(pattern: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
    """[layers, heads, q, k] → [layers, q, k]: heads averaged (live ones only, when given), 0.5·A + 0.5·I, rows
    renormalised."""
    length = pattern.shape[-1]
    mixed = 0.5 * head_average(pattern, live) + 0.5 * np.eye(length)
    return mixed / mixed.sum(axis=-1, keepdims=True)


def part_edges(scaled: np.ndarray, queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, ...]:
    """The edges of one small graph per (query, key) pair, numbered side by side: (rows, columns, capacities, each
    part's source node, each part's sink node). A part holds only what a flow from that query to that key can use: the
    query's edges into the layer below, every edge between the middle layers, and the edges into that key."""
    layers, length, _ = scaled.shape
    size = 2 + (layers - 1) * length                 # source, the middle layers' nodes, sink
    middle_rows, middle_columns, middle_capacities = [], [], []
    for layer in range(1, layers - 1):               # from layer+1 down to layer, both in the middle
        query, key = np.nonzero(scaled[layer])
        middle_rows.append(1 + layer * length + query)
        middle_columns.append(1 + (layer - 1) * length + key)
        middle_capacities.append(scaled[layer][query, key])
    middle = [np.concatenate(part) if part else np.zeros(0, np.int64)
              for part in (middle_rows, middle_columns, middle_capacities)]
    parts = len(queries)
    first = np.arange(parts) * size + 1              # each part's source; node 0 is the super source
    sinks = first + size - 1
    positions = np.arange(length)
    top = 1 + (layers - 2) * length                  # where the highest middle layer starts in a part
    rows = [np.repeat(first, length), (first[:, None] + middle[0][None]).ravel(),
            (first[:, None] + 1 + positions[None]).ravel()]
    columns = [(first[:, None] + top + positions[None]).ravel(), (first[:, None] + middle[1][None]).ravel(),
               np.repeat(sinks, length)]
    capacities = [scaled[-1][queries].ravel(), np.tile(middle[2], parts), scaled[0][:, keys].T.ravel()]
    return np.concatenate(rows), np.concatenate(columns), np.concatenate(capacities), first, sinks


def max_flows(scaled: np.ndarray, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The maximum flow of each (query, key) pair, solved in one call: the pairs' small graphs side by side, a
    super source feeding each part's source and each part's sink draining into a super sink. The parts share no
    node, so a maximum flow of the whole is a maximum flow of each part, read on the part's edge to the super sink.
    (One scipy call per pair spent most of its time building the whole graph again: 2.1x slower on h8's encoder
    at 45 words.)"""
    rows, columns, capacities, sources, sinks = part_edges(scaled, queries, keys)
    nodes = sinks[-1] + 2
    ample = np.full(len(sinks), 2 * CAPACITY_SCALE)     # more than a part can carry: a flow is at most 1 × scale
    rows = np.concatenate([np.zeros(len(sinks), np.int64), rows, sinks])
    columns = np.concatenate([sources, columns, np.full(len(sinks), nodes - 1)])
    capacities = np.concatenate([ample, capacities, ample])
    present = capacities > 0
    graph = csr_array((capacities[present].astype(np.int32), (rows[present], columns[present])), shape=(nodes, nodes))
    flow = maximum_flow(graph, 0, nodes - 1).flow
    return np.asarray(flow[sinks, np.full(len(sinks), nodes - 1)]).ravel()


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
    queries = np.arange(length) if rows is None else np.asarray(rows, dtype=int)
    scaled = np.rint(mixed * CAPACITY_SCALE).astype(np.int64)
    if layers == 1:                                   # one edge from each output to each input: its capacity
        flows = scaled[0][queries].astype(np.float64)
        return flows / flows.sum(axis=-1, keepdims=True)
    reachable = np.eye(length, dtype=bool)            # which inputs any path reaches from each output
    for layer in range(layers):
        reachable = (mixed[layer] > 0).astype(np.int64) @ reachable.astype(np.int64) > 0
    pairs = np.argwhere(reachable[queries])           # (row number, key); the others' flow is 0
    flows = np.zeros((len(queries), length))
    for start in range(0, len(pairs), PAIRS_PER_CALL):
        chunk = pairs[start: start + PAIRS_PER_CALL]
        flows[chunk[:, 0], chunk[:, 1]] = max_flows(scaled, queries[chunk[:, 0]], chunk[:, 1])
    flows /= CAPACITY_SCALE
    return flows / flows.sum(axis=-1, keepdims=True)
