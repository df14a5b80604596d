"""Corpus jobs (scoring a corpus, a pruning curve, recomputing roles or importance) take a core for seconds to
minutes. On a shared server, 30 students pressing "Compute" at once must not start 30 of them on 2 cores: each
session runs one job at a time, the server runs at most `jobs` at once (the host's `--jobs`), and the rest wait
in a queue whose place is shown on the waiting page."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from itertools import count

import streamlit as st

from explorer.analyses.jobs import distributed
from explorer.models.errors import ExplorerError
from explorer.pages.components import run_queue
from explorer.pages.components.access import policy, refuse, session_tag
from explorer.pages.components.corpus_inputs import remember_retries

POLL_SECONDS = 0.5      # how often a waiting page redraws its place (each redraw also lets the visitor leave)


class JobQueue:
    """First come, first served: a job runs once fewer than `slots` run and every job queued before it has
    started. Thread-safe: Streamlit runs each session's script in its own thread."""

    def __init__(self, slots: int):
        self.slots = slots
        self._lock = threading.Lock()
        self._tickets = count()
        self._waiting: list[tuple[int, str]] = []       # (ticket, session), in arrival order
        self._running: dict[int, str] = {}

    def busy(self, session: str) -> bool:
        with self._lock:
            return session in self._running.values() or any(s == session for _, s in self._waiting)

    def join(self, session: str) -> int:
        with self._lock:
            ticket = next(self._tickets)
            self._waiting.append((ticket, session))
            return ticket

    def ahead(self, ticket: int) -> int | None:
        """Jobs that run or wait before this one; None once it may start (it is then counted as running)."""
        with self._lock:
            place = next(i for i, (t, _) in enumerate(self._waiting) if t == ticket)
            if place == 0 and len(self._running) < self.slots:
                self._running[ticket] = self._waiting.pop(0)[1]
                return None
            return place + len(self._running)

    def leave(self, ticket: int) -> None:
        with self._lock:
            self._running.pop(ticket, None)
            self._waiting = [(t, s) for t, s in self._waiting if t != ticket]


@st.cache_resource
def server_queue(slots: int) -> JobQueue:
    """One queue for every session of this server process."""
    return JobQueue(slots)


@contextmanager
def corpus_job(what: str):
    """Run the body as this session's one corpus job, after those queued before it. On one's own machine
    (not served) jobs are not queued. The page run's slot (pages/components/run_queue.py) goes to the next run
    meanwhile: a job may take minutes, and `--jobs` bounds jobs on its own."""
    with run_queue.RUNS.set_aside():      # the class's page runs go on while this job waits and runs
        if not policy().serving:
            yield
            return
        with _in_line(what):
            yield


@contextmanager
def _in_line(what: str):
    queue, session = server_queue(policy().jobs), session_tag()
    if queue.busy(session):
        refuse(f"You already have a corpus job running or queued; {what} can start once it ends.", what)
        st.stop()
    ticket = queue.join(session)
    try:
        place = st.empty()
        while (ahead := queue.ahead(ticket)) is not None:
            place.info(f"Queued: {ahead} corpus {'job' if ahead == 1 else 'jobs'} ahead of yours on this server "
                       f"(it runs {policy().jobs} at a time). {what[0].upper() + what[1:]} starts by itself.")
            time.sleep(POLL_SECONDS)
        place.empty()
        yield
    finally:
        queue.leave(ticket)


def run_queued_job(what: str, progress_text: str, prepare, keep, retries_key: str, ray_failure: str = "",
                   file_failure: str = "") -> bool:
    """A corpus job as this session's queued job (corpus_job: `what` names it on the waiting page), with a progress
    bar: prepare() reads the files and returns compute(progress), which runs it (explorer/analyses/jobs/jobs.py's run_job:
    on Ray workers or in this process) and returns what run_job returns; its result goes to keep(result), and the
    shards Ray retried are remembered for show_retries(retries_key). True once kept; a Ray failure or a bad file is
    said on the page (after `ray_failure` or `file_failure`) and gives False."""
    try:
        compute = prepare()
        with corpus_job(what):
            bar = st.progress(0.0, text=progress_text)
            ran = compute(lambda fraction: bar.progress(fraction))
            keep(ran.result)
            remember_retries(ran.distributed, retries_key)
        return True
    except distributed.DistributedError as error:
        st.error(f"{ray_failure}{error}")
    except ExplorerError as error:      # a file, corpus or head list of the person's (a bug keeps its traceback)
        st.error(f"{file_failure}{error}")
    return False
