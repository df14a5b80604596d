"""The corpus jobs by name. A job says once how the command line, the pages and the Ray workers run it:

    @corpus_job("roles", read=RolesReport.from_json)
    class Roles:
        def key(inputs, options) -> bytes                    # what its result depends on, besides the model
        def shard(model, inputs, options, parts) -> [dict]   # plain data, one dict per shard (parts 1: all)
        def run(model, shard, progress) -> statistics        # one shard: additive statistics, never ratios
        def merge(model, inputs, options, statistics) -> result
        def compute(model, inputs, options, executor, progress) -> result   # optional: a job made of other jobs

`run` runs in a Ray worker or in this process (explorer/analyses/jobs/jobs.py decides which); `compute` defaults to
shard → run on each → merge. A job without `key` is never cached on disk; `read` turns a cached result's JSON back
into its result (a Record's from_json).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class CorpusJob:
    name: str
    module: str                         # where it is defined: a Ray worker imports it to find the job
    shard: Callable[..., list[dict]] | None
    run: Callable[..., Any] | None
    merge: Callable[..., Any] | None
    compute: Callable[..., Any]
    key: Callable[[dict, dict], bytes] | None
    read: Callable[[dict], Any] | None  # a cached result's JSON → the result


JOBS: dict[str, CorpusJob] = {}


def corpus_job(name: str, read: Callable[[dict], Any] | None = None):
    """Register a class of functions (key, shard, run, merge, compute; see above) as the corpus job `name`."""
    def register(definition: type) -> type:
        part = lambda attribute: getattr(definition, attribute, None)      # noqa: E731
        known = JOBS.get(name)
        if known is not None and known.module != definition.__module__:
            raise ValueError(f"corpus job {name!r} is defined twice: in {known.module} and {definition.__module__}")
        JOBS[name] = CorpusJob(name, definition.__module__, part("shard"), part("run"), part("merge"),
                               part("compute") or _shard_run_merge(name), part("key"), read)
        return definition
    return register


def _shard_run_merge(name: str):
    def compute(model, inputs: dict, options: dict, executor, progress: Progress = None):
        job = JOBS[name]
        shards = job.shard(model, inputs, options, executor.parts)
        return job.merge(model, inputs, options, executor.map(name, shards, progress))
    return compute


def registered(name: str, module: str | None = None) -> CorpusJob:
    """The job called `name`; `module` is imported first when it is not registered yet (in a fresh Ray worker)."""
    if name not in JOBS and module:
        importlib.import_module(module)
    if name not in JOBS:
        raise KeyError(f"no corpus job is called {name!r}; known: {', '.join(sorted(JOBS))}")
    return JOBS[name]
