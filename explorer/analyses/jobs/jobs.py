"""run_job: the one way the command line and the pages run a corpus job (explorer/analyses/jobs/corpus_jobs.py, or any
job registered with @corpus_job): read from the disk cache when computed before, else on Ray workers
(explorer/analyses/jobs/distributed.py) when more than one worker or a cluster is asked for, else in this process; with
progress, and kept on disk for the next time.

    ran = run_job("roles", model, {"sentences": lines, "trees": None}, {"text_name": "val.en.gz"},
                  workers=2, progress=bar, cache_folder=None)
    ran.result          # a RolesReport (explorer/analyses/corpus/results.py)
    ran.distributed     # how the work was spread (workers, retried, startup_seconds), None in this process

cache_folder None computes and never writes (the command line; a shared server's visitor uploads, which must leave
nothing on its disk); a folder keys the file on the model's weights, its target language, the job and a hash of its
inputs and options (shipped_analyses.cached_analysis).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.analyses.corpus.shipped_analyses import CACHE, cached_analysis, corpus_hash
from explorer.analyses.jobs import (
    atlas_jobs,  # noqa: F401 (registers the head atlas's jobs)
    corpus_jobs,  # noqa: F401 (registers the explorer's jobs)
    distributed,
)
from explorer.analyses.jobs.job_registry import JOBS, Progress, registered


@dataclass(frozen=True)
class Distribution:
    """How a job was spread over Ray workers (the attributes of a RayRunner that the notes read)."""
    workers: int
    retried: int                # shards given to a fresh worker after one died, in this job
    startup_seconds: float      # starting the workers (0 when kept from an earlier job)


@dataclass(frozen=True)
class Ran:
    result: Any
    distributed: Distribution | None = None      # None: computed in this process, or read from the cache
    cached: bool = False


class InProcess:
    """Runs a job's shards here, one after another: the corpus is one shard."""

    parts = 1

    def __init__(self, model) -> None:
        self.model = model

    def map(self, name: str, shards: list[dict], progress: Progress = None) -> list:
        results = []
        for number, shard in enumerate(shards):
            step = None if progress is None else (
                lambda fraction, number=number: progress((number + fraction) / len(shards)))
            results.append(JOBS[name].run(self.model, shard, step))
            if progress:
                progress((number + 1) / len(shards))
        return results


class OnRay:
    """Runs a job's shards on Ray workers, which open the model themselves: each shard travels as plain data with
    the job's name and module (a worker imports it to find the job) and the model's target language."""

    def __init__(self, runner, model) -> None:
        self.runner, self.model = runner, model
        # more shards than workers: a slow or restarted worker delays less
        self.parts = runner.workers * distributed.SHARDS_PER_WORKER

    def map(self, name: str, shards: list[dict], progress: Progress = None) -> list:
        job = JOBS[name]
        return self.runner.run([dict(shard, job=name, module=job.module, target_language=self.model.target_language)
                                for shard in shards], progress)


def run_job(name: str, model, inputs: dict, options: dict | None = None, workers: int = 1, address: str | None = None,
            progress: Progress = None, cache_folder: Path | None = CACHE) -> Ran:
    """The job's result for this model, inputs (the corpus, as plain data) and options (see each job)."""
    job, options = registered(name), options or {}
    spread: list[Distribution] = []

    def compute():
        # workers_for read from its module when called (not bound on import): tests put a stand-in there.
        with distributed.workers_for(str(model.path), workers, address) as runner:
            retried = runner.retried if runner is not None else 0
            executor = OnRay(runner, model) if runner is not None else InProcess(model)
            result = job.compute(model, inputs, options, executor, progress)
            if runner is not None:
                spread.append(Distribution(runner.workers, runner.retried - retried, runner.startup_seconds))
        return result

    if cache_folder is None or job.key is None or job.read is None:
        return Ran(compute(), spread[0] if spread else None)
    computed: list[bool] = []

    def computed_json() -> dict:
        computed.append(True)
        return compute().to_json()

    document = cached_analysis(name, model, corpus_hash(job.key(inputs, options)), computed_json, cache_folder)
    return Ran(job.read(document), spread[0] if spread else None, cached=not computed)
