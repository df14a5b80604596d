"""No more page runs at once than the machine has cores (issue 48). Streamlit runs every browser session's script in
a thread of one process, and torch runs each on one thread (pages/app.py): more runs at once only share the cores,
so every one of them finishes later. The others wait their turn, first come first served, and their page says that
they wait and about how long, instead of looking frozen. A run that finds the server free starts at once.

The estimate is the median of the last 50 runs' times, once per full round of the cores ahead of this view. Before
any run has finished (a server just started, its first heavy views), it is the longest time a running view has run
so far, 1 s at least: a fixed 1 s told a student "about 1 s" behind three 45-word beam searches.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SLOTS_VARIABLE = "ATTENTION_EXPLORER_RUNS"       # how many runs at once (default: the machine's cores)
TYPICAL_RUN = 1.0                                 # seconds, before any run has been timed


class RunQueue:
    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        self.condition = threading.Condition()
        self.running = 0
        self.waiting: deque[object] = deque()            # tickets in arrival order
        self.holders: dict[int, float] = {}              # the threads holding a slot → when their run started
        self.durations: deque[float] = deque(maxlen=50)

    def estimate(self, ahead: int) -> float:
        """Seconds until a run with `ahead` runs queued before it starts, about."""
        with self.condition:
            if self.durations:
                typical = statistics.median(self.durations)
            else:           # none finished yet: each running one has run this long at least
                now = time.perf_counter()
                typical = max([TYPICAL_RUN] + [now - started for started in self.holders.values()])
        return typical * (ahead // self.slots + 1)

    @contextmanager
    def turn(self, on_wait: Callable[[int, float], None]) -> Iterator[None]:
        """Hold one of the slots while the block runs. When none is free, on_wait(runs queued ahead, seconds
        estimated) is called once, then the block waits for its turn."""
        self._take(on_wait)
        started = time.perf_counter()
        try:
            yield
        finally:
            self._give_back(time.perf_counter() - started)

    @contextmanager
    def set_aside(self) -> Iterator[None]:
        """Give this thread's slot to the next run while the block runs, and take one again after it, in line. For
        a corpus job: `--jobs` bounds those on its own, and one may take minutes, which the class must not wait
        for."""
        holding = threading.get_ident() in self.holders
        if holding:
            self._give_back(None)
        try:
            yield
        finally:
            if holding:
                self._take(lambda *_: None)

    def _take(self, on_wait: Callable[[int, float], None]) -> None:
        ticket = object()
        with self.condition:
            free = self.running < self.slots and not self.waiting
            if free:
                self.running += 1
                self.holders[threading.get_ident()] = time.perf_counter()
                return
            self.waiting.append(ticket)
            ahead = len(self.waiting) - 1
        on_wait(ahead, self.estimate(ahead))
        with self.condition:
            while self.waiting[0] is not ticket or self.running >= self.slots:
                self.condition.wait()
            self.waiting.popleft()
            self.running += 1
            self.holders[threading.get_ident()] = time.perf_counter()
            self.condition.notify_all()          # the next in line may find a free slot too

    def _give_back(self, seconds: float | None) -> None:
        with self.condition:
            self.running -= 1
            self.holders.pop(threading.get_ident(), None)
            if seconds is not None:
                self.durations.append(seconds)
            self.condition.notify_all()


RUNS = RunQueue(int(os.environ.get(SLOTS_VARIABLE, 0)) or os.cpu_count() or 1)


def queued_message(ahead: int, seconds: float) -> str:
    """What a waiting student reads: that the view is queued, its place, and about how long."""
    place = "yours is next" if ahead == 0 else f"yours is queued behind {ahead} other view{'s' * (ahead > 1)}"
    return (f"The server is busy with other students' views: {place}, and starts in about {max(1, round(seconds))} s. "
            "It opens by itself; there is no need to reload.")
