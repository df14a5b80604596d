"""The shared cache of traces: bounded by bytes and by entries, least recently used out first, read-only."""

import numpy as np
import pytest

from explorer.capture.memo import BoundedCache, size_of
from explorer.capture.trace import trace_sentence


def test_size_of_counts_the_arrays_of_a_trace(h8):
    trace = trace_sentence(h8, "Two dogs play in the snow.")
    arrays = sum(a.nbytes for parts in trace.attention.values() for a in parts.arrays().values())
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


def test_sessions_asking_for_the_same_new_key_at_once_share_one_computation():
    """A class on the teacher's sentence: eight sessions ask at once, one trace is made, all get that one."""
    import threading
    import time

    cache, calls, results = BoundedCache(max_bytes=10**9, max_entries=8), [], []

    def slow_trace():
        calls.append(1)
        time.sleep(0.2)
        return np.arange(4.0)

    threads = [threading.Thread(target=lambda: results.append(cache.get("teacher", slow_trace))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1 == cache.computed and len(results) == 8
    assert all(result is results[0] for result in results) and not results[0].flags.writeable


def test_a_failed_computation_lets_each_waiting_session_compute_on_its_own():
    import threading
    import time

    cache, attempts, outcomes = BoundedCache(max_bytes=10**9, max_entries=8), [], []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            time.sleep(0.2)
            raise RuntimeError("the first computation failed")
        return np.ones(2)

    def ask():
        try:
            outcomes.append(cache.get("key", flaky).sum())
        except RuntimeError as error:
            outcomes.append(str(error))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    for thread in threads:
        thread.join(10)
    assert sorted(map(str, outcomes)) == ["2.0", "2.0", "the first computation failed"] and len(attempts) == 3
    assert cache.get("key", flaky).sum() == 2.0 and len(attempts) == 4     # the failure was not kept
