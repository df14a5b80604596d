"""Corpus analyses on Ray: evaluation, roles, importance (gradient and ablation) and pruning curves split into
shards of the corpus, run by workers that each load the model once, and summed.

Only with `--workers N` (N > 1) or `--ray-address`: without them nothing here is imported and the analyses run
in one process as always.

- The model reaches each worker as a path it opens itself (safetensors, never pickle): nothing of a
  checkpoint is pickled, and a worker runs only this project's code.
- Workers return additive statistics, never ratios: summed losses and token counts, sacreBLEU's n-gram
  statistics (corpus BLEU is not the mean of the shards' BLEU), summed |∂L/∂gate| and example counts, and the
  role tallies (counts, and per-sentence statistics in the corpus's order). The driver adds them up and computes
  each score once, so results equal the one-process run: counts and BLEU exactly, summed floats up to rounding.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np

from explorer.analyses.corpus_scoring import add_statistics, scores_from
from models.interface import Multilingual
from models.errors import ExplorerError

ROOT = Path(__file__).resolve().parents[2]
MAX_RETRIES = 3              # per job: a job that kills every worker it meets is a bug, not bad luck
SETS_PER_JOB = 8             # head sets scored by one job (on one shard)
SHARDS_PER_WORKER = 2        # more shards than workers, so a slow or restarted worker delays less


class DistributedError(ExplorerError, RuntimeError):
    """Ray cannot be reached or a job keeps failing; the message says which and what to do."""


class ShardWorker:
    """One Ray worker process: opens the model once, then runs jobs (plain data in, statistics out)."""

    def __init__(self, model_path: str, threads: int = 1, job_delay: float = 0.0) -> None:
        import torch

        from models.loader import open_model

        torch.set_num_threads(threads)
        self.checkpoint = open_model(model_path)
        self.job_delay = job_delay      # seconds each job waits first: lets a test kill a worker mid-job

    def pid(self) -> int:
        return os.getpid()

    def run(self, job: dict):
        from explorer.analyses.corpus_scoring import scorer_for
        from explorer.capture.head_sets import head_mask, parse_heads
        from explorer.analyses.importance import gradient_totals
        from explorer.analyses.roles import role_tallies

        time.sleep(self.job_delay)
        checkpoint = self.checkpoint
        if job.get("target_language") and isinstance(checkpoint, Multilingual):
            checkpoint = checkpoint.for_target_language(job["target_language"])
        if job["job"] == "faithfulness":
            from explorer.analyses.faithfulness import faithfulness_tallies
            return faithfulness_tallies(checkpoint, job["sentences"])
        if job["job"] == "roles":
            return role_tallies(checkpoint, job["sentences"], job["trees"], tuple(job["kinds"]))
        if job["job"] == "evaluate":
            return evaluation_statistics(checkpoint, job)
        scorer = scorer_for(checkpoint, job["sources"], job["references"])
        if job["job"] == "gradient":
            return gradient_totals(scorer)
        return [scorer.statistics(head_mask(parse_heads(heads, checkpoint), checkpoint), job["with_quality"])
                for heads in job["sets"]]


def evaluation_statistics(model, job: dict) -> dict:
    """One shard of `evaluate`: BLEU and chrF statistics of its translations (with the job's decoding options), or
    a language model's loss totals."""
    from explorer.analyses.corpus_scoring import scorer_for
    from explorer.capture.head_sets import head_mask, parse_heads
    from explorer.capture.translation import evaluation_statistics as translated

    pruned = parse_heads(job["pruned"], model)
    if job["references"] is None:
        scorer = scorer_for(model, job["sources"])
        total, tokens = scorer.loss_totals(head_mask(pruned, model))
        return {"loss_sum": total, "tokens": tokens, "examples": scorer.size}
    return translated(model, job["sources"], job["references"], job["beam"], pruned, job["alpha"], job["fix_casing"])


def distributed_evaluate(runner: "RayRunner", checkpoint, sources: list[str], references: list[str] | None,
                         options: dict, progress: Callable[[float], None] | None = None) -> dict:
    """`evaluate` on shards: BLEU and chrF from the summed statistics, or loss and perplexity of a text."""
    from explorer.capture.translation import evaluation_scores

    groups = translation_groups(checkpoint, sources, references, options["fix_casing"])
    parts = runner.run([dict(options, job="evaluate", sources=[sources[i] for i in shard],
                             references=None if references is None else [references[i] for i in shard])
                        for shard in shards_of(groups, runner.workers * SHARDS_PER_WORKER)], progress)
    if references is None:
        total = add_statistics(parts)
        loss = total["loss_sum"] / max(1, total["tokens"])
        return {"loss": round(loss, 4), "perplexity": round(math.exp(min(loss, 50.0)), 2), "lines": total["examples"]}
    return evaluation_scores(parts, len(sources))       # the pairs with a blank side were never sent


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
    # Workers import this project from its folder: the same path on every node of a cluster (docs/ray.md).
    runtime_env = {"env_vars": {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}}
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
                raise DistributedError(f"a worker failed: {str(error.cause or error).splitlines()[0]}") from None
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


def engine_for(runner: "RayRunner | None", scorer, sources: list[str], references: list[str] | None):
    """The RayEngine for a scorer's corpus, or None without workers."""
    if runner is None:
        return None
    groups = translation_groups(scorer.model, sources, references, fix_casing=False)   # as the scorer reads them
    return RayEngine(runner, scorer.metric, sources, references, groups, scorer.model.target_language)


def tallies_on(runner: "RayRunner | None"):
    """analyse_roles' tallies_of: the role tallies computed by the workers (None: in this process)."""
    if runner is None:
        return None
    return lambda checkpoint, sentences, trees, kinds, batch_size, progress: distributed_roles(
        runner, sentences, trees, kinds, progress, checkpoint.target_language)


def translation_groups(model, sources: list[str], references: list[str] | None,
                       fix_casing: bool = True) -> list[list[int]]:
    """Indices of the usable pairs (lines), grouped as the one-process run batches their translations: sorted by
    source length, model.generation_batch a batch. Shards made of whole groups translate every sentence in the
    very batch it has in one process, padded alike, so the translations, and BLEU, are the same to the last bit."""
    from explorer.capture.inputs import prepare_source
    from explorer.capture.translation import usable_pairs
    from models.tokenizer import clean_text

    size = model.generation_batch
    if references is None:                       # a language model's text: scored by loss alone, in any batches
        kept = [i for i, line in enumerate(sources) if clean_text(line)]
        return [kept[start: start + size] for start in range(0, len(kept), size)]
    kept = usable_pairs(sources, references)
    length = {i: len(prepare_source(sources[i], model, fix_casing).ids) for i in kept}
    order = sorted(kept, key=length.get)
    return [order[start: start + size] for start in range(0, len(order), size)]


def shards_of(groups: list[list[int]], parts: int) -> list[list[int]]:
    """Whole groups, consecutive, dealt into at most `parts` shards of near-equal size."""
    bounds = shards(len(groups), parts)
    return [[index for group in groups[r.start: r.stop] for index in group] for r in bounds]


def shards(count: int, parts: int) -> list[range]:
    """Contiguous index ranges splitting `count` items into at most `parts` near-equal shards."""
    parts = max(1, min(parts, count))
    size = math.ceil(count / parts)
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


class RayEngine:
    """Gradient totals and head-set scores of a corpus on Ray (importance.importance_report and
    pruning.pruning_curve take it as their engine / set_scores)."""

    def __init__(self, runner: RayRunner, metric: str, sources: list[str], references: list[str] | None,
                 groups: list[list[int]], target_language: str = "") -> None:
        self.runner, self.metric = runner, metric
        self.shards = [{"sources": [sources[i] for i in shard], "target_language": target_language,
                        "references": None if references is None else [references[i] for i in shard]}
                       for shard in shards_of(groups, runner.workers * SHARDS_PER_WORKER)]

    def gradient_totals(self, progress: Callable[[float], None] | None = None) -> tuple[dict, int]:
        parts = self.runner.run([dict(shard, job="gradient") for shard in self.shards], progress)
        totals = {kind: np.sum([part[0][kind] for part in parts], axis=0) for kind in parts[0][0]}
        return totals, sum(part[1] for part in parts)

    def set_scores(self, sets: list, with_quality: bool, progress: Callable[[float], None] | None = None) -> list:
        """[(loss, quality)] of each head set on the whole corpus: each job scores a few sets on one shard."""
        from explorer.capture.head_sets import format_heads

        texts = [format_heads(heads) for heads in sets]
        chunks = [range(start, min(start + SETS_PER_JOB, len(sets))) for start in range(0, len(sets), SETS_PER_JOB)]
        jobs = [dict(shard, job="statistics", sets=[texts[i] for i in chunk], with_quality=with_quality)
                for chunk in chunks for shard in self.shards]
        results = self.runner.run(jobs, progress)
        per_set: list[list[dict]] = [[] for _ in sets]
        for job_number, result in enumerate(results):
            chunk = chunks[job_number // len(self.shards)]
            for index, stats in zip(chunk, result):
                per_set[index].append(stats)
        scores = [scores_from(add_statistics(parts), self.metric) for parts in per_set]
        return [(loss, quality if with_quality else None) for loss, quality in scores]


def distributed_roles(runner: RayRunner, sentences: list[str], trees: list | None, kinds: tuple[str, ...],
                      progress: Callable[[float], None] | None = None, target_language: str = ""):
    """Role tallies of shards of the sentences (and trees), merged in order (explorer.analyses.head_tallies.merge_tallies)."""
    from explorer.analyses.head_tallies import merge_tallies

    parts = runner.workers * SHARDS_PER_WORKER
    sentence_shards = shards(len(sentences), parts)
    tree_shards = shards(len(trees), len(sentence_shards)) if trees else []
    jobs = []
    for number, sentence_range in enumerate(sentence_shards):
        tree_range = tree_shards[number] if number < len(tree_shards) else range(0)
        jobs.append({"job": "roles", "sentences": sentences[sentence_range.start: sentence_range.stop],
                     "trees": [trees[i] for i in tree_range] if trees else None, "kinds": list(kinds),
                     "target_language": target_language})
    return merge_tallies(runner.run(jobs, progress))
