"""The shared cache of traces: bounded by bytes and by entries, least recently used out first, read-only."""

import numpy as np
import pytest

from explorer.capture.memo import BoundedCache, size_of
from explorer.capture.trace import trace_sentence


def test_size_of_counts_the_arrays_of_a_trace(h8):
    trace = trace_sentence(h8, "Two dogs play in the snow.")
    arrays = sum(a.nbytes for parts in trace.attention.values() for a in parts.values())
    arrays += sum(a.nbytes for group in (trace.masks, trace.positional, trace.embeddings, trace.inputs)
                  for a in group.values())
    assert arrays <= size_of(trace) <= arrays * 1.2 + 100_000


def test_the_cache_drops_the_least_recently_used_once_over_its_bytes():
    cache = BoundedCache(max_bytes=3_000, max_entries=10)
    computed = []

    def block(name):
        return lambda: computed.append(name) or np.zeros(100, dtype=np.float64)      # 800 bytes

    for name in "abc":
        cache.get(name, block(name))
    cache.get("a", block("a"))              # used again: now b is the oldest
    cache.get("d", block("d"))              # 4 × 800 > 3,000: b goes
    assert computed == ["a", "b", "c", "d"] and "b" not in cache and all(k in cache for k in "acd")
    assert cache.bytes == 3 * 800
    cache.get("huge", lambda: np.zeros(1_000))      # 8,000 bytes: returned, never kept
    assert "huge" not in cache and len(cache) == 3


def test_the_cache_drops_past_its_entries_and_shares_read_only_results():
    cache = BoundedCache(max_bytes=10**9, max_entries=2)
    first = cache.get(1, lambda: {"pattern": np.ones((2, 2))})
    assert cache.get(1, lambda: None) is first
    with pytest.raises(ValueError):
        first["pattern"][0, 0] = 5          # one session cannot change what another sees
    cache.get(2, lambda: 2)
    cache.get(3, lambda: 3)
    assert 1 not in cache and len(cache) == 2
