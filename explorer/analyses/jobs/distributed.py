"""Corpus jobs on Ray (explorer/analyses/jobs/jobs.py: evaluation, roles, importance, pruning curves, faithfulness): their
shards run by workers that each open the model once; and how a corpus is cut into shards.

Only with `--workers N` (N > 1) or `--ray-address`: without them Ray is never imported and the jobs run in one
process.

- The model reaches each worker as a path it opens itself (safetensors, never pickle): nothing of a
  checkpoint is pickled, and a worker runs only this project's code.
- A worker runs one shard of a registered job (explorer/analyses/jobs/job_registry.py), found by its name and module:
  plain data in, additive statistics out, which the driver merges (explorer/analyses/jobs/corpus_jobs.py).
- A job whose worker dies (killed, out of memory, a node lost) is given to a fresh worker and counted in
  `retried`; each job's result is kept once, so nothing is lost or counted twice.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from explorer.models.errors import ExplorerError
from explorer.models.interface import Generates, Multilingual

MAX_RETRIES = 3              # per job: a job that kills every worker it meets is a bug, not bad luck
SETS_PER_JOB = 8             # head sets scored by one Ray job (on one shard), corpus_jobs.HeadSets
SHARDS_PER_WORKER = 2        # more shards than workers, so a slow or restarted worker delays less


class DistributedError(ExplorerError, RuntimeError):
    """Ray cannot be reached or a job keeps failing; the message says which and what to do."""


class ShardWorker:
    """One Ray worker process: opens the model once, then runs jobs (plain data in, statistics out)."""

    def __init__(self, model_path: str, threads: int = 1, job_delay: float = 0.0) -> None:
        import torch

        from explorer.models.loader import open_model

        torch.set_num_threads(threads)
        self.checkpoint = open_model(model_path)
        self.job_delay = job_delay      # seconds each job waits first: lets a test kill a worker mid-job

    def pid(self) -> int:
        return os.getpid()

    def run(self, job: dict):
        """One shard of a registered corpus job (explorer/analyses/jobs/job_registry.py): the job's name and module, its
        plain data and the target language of a multilingual model."""
        from explorer.analyses.jobs.job_registry import registered

        time.sleep(self.job_delay)
        checkpoint = self.checkpoint
        if job.get("target_language") and isinstance(checkpoint, Multilingual):
            checkpoint = checkpoint.for_target_language(job["target_language"])
        return registered(job["job"], job.get("module")).run(checkpoint, job, None)


def check_address(address: str, timeout: float = 3.0) -> None:
    """Fail in seconds, with one clear line, when nothing listens at a Ray address (ray.init would keep trying)."""
    if address == "auto":
        return
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise DistributedError(f"Ray address {address}: expected HOST:PORT (e.g. 10.0.0.5:6379, as `ray start "
                               "--head` prints) or ray://HOST:10001")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as error:
        raise DistributedError(f"Ray address {address}: no Ray cluster answers there ({error.strerror or error}); "
                               "start one with `ray start --head` and give the address it prints") from None


def connect(workers: int, address: str | None):
    """The Ray module, connected: to the cluster at `address`, or to a local Ray with `workers` CPUs."""
    if address:
        check_address(address)
    import logging

    import ray

    if ray.is_initialized():
        return ray
    # Workers import the explorer as it is installed where they run (pip install attention-explorer on every node
    # of a cluster: docs/ray.md); one thread each, as the app's own computations.
    runtime_env = {"env_vars": {"OMP_NUM_THREADS": "1"}}
    try:
        if address:
            ray.init(address=address, runtime_env=runtime_env, logging_level=logging.ERROR, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, runtime_env=runtime_env,
                     logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise DistributedError(f"Ray could not start{' at ' + address if address else ''}: "
                               f"{str(error).splitlines()[0]}") from None
    return ray


class RayRunner:
    """Runs jobs on `workers` Ray actors holding the model; retries a dead worker's job on a fresh one."""

    def __init__(self, model_path: str, workers: int = 2, address: str | None = None, job_delay: float = 0.0) -> None:
        started = time.perf_counter()
        let_workers_go()        # kept workers hold the CPUs a local Ray has: new ones would wait for them forever
        self.ray = connect(workers, address)
        self.model_path, self.workers = str(Path(model_path).expanduser()), workers
        self.actor_class = self.ray.remote(num_cpus=1, max_restarts=0)(ShardWorker)
        self.new_actor = lambda: self.actor_class.remote(self.model_path, 1, job_delay)
        self.actors = [self.new_actor() for _ in range(workers)]
        self.retried = 0
        self.startup_seconds = time.perf_counter() - started

    def run(self, jobs: list[dict], progress: Callable[[float], None] | None = None) -> list:
        ray = self.ray
        queue, running, results = deque(range(len(jobs))), {}, [None] * len(jobs)
        failures, done, idle = [0] * len(jobs), 0, list(self.actors)
        while queue or running:
            while queue and idle:
                index, actor = queue.popleft(), idle.pop()
                running[actor.run.remote(jobs[index])] = (index, actor)
            [finished], _ = ray.wait(list(running), num_returns=1)
            index, actor = running.pop(finished)
            try:
                results[index] = ray.get(finished)
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                    ray.exceptions.ObjectLostError):
                failures[index] += 1
                self.retried += 1
                if failures[index] > MAX_RETRIES:
                    raise DistributedError(f"a job failed on {failures[index]} workers in a row; see Ray's logs "
                                           "(/tmp/ray/session_latest/logs)") from None
                self.actors.remove(actor)
                fresh = self.new_actor()                               # replaces the dead worker
                self.actors.append(fresh)
                idle.append(fresh)
                queue.appendleft(index)
                continue
            except ray.exceptions.RayTaskError as error:     # the job itself failed: the same everywhere
                if isinstance(error.cause, ExplorerError):  # the person's input: their one-line message
                    raise error.cause from None
                raise RuntimeError(f"a worker failed: {str(error.cause or error).splitlines()[0]}") from error
            idle.append(actor)
            done += 1
            if progress:
                progress(done / len(jobs))
        return results

    def pids(self) -> list[int]:
        return self.ray.get([actor.pid.remote() for actor in self.actors])

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []


# The workers of the last run, kept for the next one in this process: a worker's start (a Python process that
# imports torch and opens the model) costs seconds of CPU, and a notebook or a test suite asks again and again.
_kept: dict = {}
_keeping = threading.RLock()


def model_files_stamp(model_path: str) -> tuple:
    """What changes when the model on disk does: the folder's files with their sizes and times."""
    folder = Path(model_path).expanduser()
    if not folder.is_dir():
        return ()
    return tuple(sorted((entry.name, entry.stat().st_size, entry.stat().st_mtime_ns)
                        for entry in folder.iterdir() if entry.is_file()))


@contextmanager
def workers_for(model_path: str, workers: int = 1, address: str | None = None):
    """Ray workers holding the model when more than one process or a cluster is asked for (None otherwise: the
    caller computes in its own process). The workers stay for the next run of the same model files; another
    model's run lets them go first, freeing their CPUs."""
    if workers <= 1 and not address:
        yield None
        return
    key = (str(Path(model_path).expanduser()), workers, address, model_files_stamp(model_path))
    with _keeping:          # held for the whole run: one run at a time uses the kept workers
        runner = _kept.get(key)
        if runner is not None and not runner.ray.is_initialized():    # Ray was shut down since: they are gone
            _kept.clear()
            runner = None
        if runner is None:
            runner = _kept[key] = RayRunner(str(model_path), workers, address)
        else:
            runner.startup_seconds = 0.0
        try:
            yield runner
        except BaseException:           # a run that failed may leave a worker broken: the next one starts afresh
            let_workers_go()
            raise


def let_workers_go() -> None:
    """Close the kept workers (before Ray shuts down, or to free their memory)."""
    with _keeping:
        for runner in _kept.values():
            runner.close()
        _kept.clear()


def translation_groups(model, sources: list[str], references: list[str] | None,
                       fix_casing: bool = False) -> list[list[int]]:
    """Indices of the usable pairs (lines), grouped as the one-process run batches their translations: sorted by
    source length, model.generation_batch a batch. Shards made of whole groups translate every sentence in the
    very batch it has in one process, padded alike, so the translations, and BLEU, are the same to the last bit."""
    from explorer.capture.inputs import prepare_source
    from explorer.capture.translation import usable_pairs
    from explorer.models.tokenizer import clean_text

    size = generation_batch(model)
    if references is None:                       # a language model's text: scored by loss alone, in any batches
        kept = [i for i, line in enumerate(sources) if clean_text(line)]
        return [kept[start: start + size] for start in range(0, len(kept), size)]
    kept = usable_pairs(sources, references)
    length = {i: len(prepare_source(sources[i], model, fix_casing).ids) for i in kept}
    order = sorted(kept, key=length.get)
    return [order[start: start + size] for start in range(0, len(order), size)]


def generation_batch(model) -> int:
    """Sentences a model decodes together (1 for one that writes nothing: any grouping scores alike)."""
    return model.generation_batch if isinstance(model, Generates) else 1


def shards_of(groups: list[list[int]], parts: int) -> list[list[int]]:
    """Whole groups, consecutive, dealt into at most `parts` shards of near-equal size."""
    bounds = shards(len(groups), parts)
    return [[index for group in groups[r.start: r.stop] for index in group] for r in bounds]


def shards(count: int, parts: int) -> list[range]:
    """Contiguous index ranges splitting `count` items into at most `parts` near-equal shards."""
    parts = max(1, min(parts, count))
    size = math.ceil(count / parts)
    return [range(start, min(start + size, count)) for start in range(0, count, size)]
