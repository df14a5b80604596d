"""A cache bounded by bytes as well as entries, for results shared by every session of a server.

A trace's size grows with the square of the sentence's length: 0.5 MB for 20 tokens on the 8-head model, about
70 MB for 250. A cache of 256 entries alone could hold gigabytes of long sentences, so this one also drops its
least recently used entries once their arrays pass a byte budget.

Results are shared, not copied (Streamlit's cache_data would copy each on every read): their arrays are made
read-only, so no page can change what another session sees.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import torch
from cachetools import LRUCache


def size_of(value: Any) -> int:
    """Bytes held by a result: its arrays and tensors, and the containers, strings and dataclasses around them."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(size_of(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(size_of(k) + size_of(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sys.getsizeof(value) + sum(size_of(item) for item in value)
    return sys.getsizeof(value)


def read_only(value: Any) -> Any:
    """Make every numpy array inside a result read-only (in place), and return the result."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            read_only(getattr(value, field.name))
    elif isinstance(value, dict):
        for item in value.values():
            read_only(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            read_only(item)
    return value


@dataclasses.dataclass
class _InFlight:
    """A result one session is computing, that others asking for the same key wait for."""

    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    value: Any = None
    failed: bool = False


class BoundedCache:
    """Least recently used first out, once there are more than `max_entries` or more than `max_bytes` (cachetools'
    LRUCache, each entry counted at its bytes but at least max_bytes / max_entries, so both bounds hold). A result
    bigger than the whole budget is returned but not kept. Thread-safe, and computed once: sessions asking for a
    key another session is computing wait for its result (a class of 30 on the teacher's sentence makes one trace,
    not 30); should that computation fail, each computes the key itself."""

    def __init__(self, max_bytes: int, max_entries: int):
        self.max_bytes, self.max_entries = max_bytes, max_entries
        least = max_bytes // max_entries
        self._entries: LRUCache = LRUCache(max_bytes, getsizeof=lambda value: max(size_of(value), least))
        self._in_flight: dict[Hashable, _InFlight] = {}
        self._lock = threading.Lock()
        self.computed = 0              # computations run (a test counts them)

    @property
    def bytes(self) -> int:
        """What the entries count for: their bytes, each at least max_bytes / max_entries."""
        return int(self._entries.currsize)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._entries:
                return self._entries[key]           # a read makes it the most recently used
            flight = self._in_flight.get(key)
            owner = flight is None
            if flight is None:
                flight = self._in_flight[key] = _InFlight()
                self.computed += 1
        if not owner:
            flight.done.wait()
            return read_only(compute()) if flight.failed else flight.value
        try:
            flight.value = read_only(compute())
            self._put(key, flight.value)
            return flight.value
        except BaseException:
            flight.failed = True
            raise
        finally:
            with self._lock:
                del self._in_flight[key]
            flight.done.set()

    def _put(self, key: Hashable, value: Any) -> None:
        if self._entries.getsizeof(value) > self.max_bytes:
            return
        with self._lock:
            self._entries[key] = value              # the least recently used go first, as far as it needs

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
