"""The corpus-job registry and its one entry (explorer/analyses/jobs/job_registry.py, jobs.py): a job registered here
(words counted per shard) gives the same merged answer in this process and on a local Ray whose workers find it by
its module, and a second run is read from the disk cache."""

from collections import Counter
from dataclasses import dataclass

import pytest

from explorer.analyses.jobs.corpus_jobs import corpus_key
from explorer.analyses.jobs.distributed import let_workers_go, shards
from explorer.analyses.jobs.job_registry import JOBS, corpus_job, registered
from explorer.analyses.jobs.jobs import run_job
from explorer.analyses.records import Record

LINES = ["a dog runs", "two dogs run in the snow", "", "a girl reads a book", "the dog sleeps", "a dog"] * 3
RUNS: list[int] = []          # shards run in this process (a Ray worker's runs are counted in its own)


@dataclass
class WordCounts(Record):
    counts: dict
    shards: int


@corpus_job("test-words", read=WordCounts.from_json)
class Words:
    def key(inputs, options):
        return corpus_key(inputs, options)

    def shard(model, inputs, options, parts):
        return [{"lines": inputs["lines"][part.start: part.stop]} for part in shards(len(inputs["lines"]), parts)]

    def run(model, shard, progress=None):
        RUNS.append(len(shard["lines"]))
        return dict(Counter(word for line in shard["lines"] for word in line.split()))

    def merge(model, inputs, options, parts):
        total = Counter()
        for part in parts:
            total.update(part)
        return WordCounts(dict(sorted(total.items())), len(parts))


EXPECTED = dict(sorted(Counter(" ".join(LINES).split()).items()))


def test_a_registered_job_runs_in_this_process_and_its_second_run_is_read_from_disk(tiny_checkpoint, tmp_path):
    assert registered("test-words").module == __name__ and {"evaluate", "roles", "importance", "curve",
                                                            "faithfulness", "gradient", "head-sets"} <= set(JOBS)
    RUNS.clear()
    first = run_job("test-words", tiny_checkpoint, {"lines": LINES}, cache_folder=tmp_path)
    assert first.result == WordCounts(EXPECTED, 1) and not first.cached and first.distributed is None
    assert [len(LINES)] == RUNS and len(list(tmp_path.glob("test-words-*.json"))) == 1
    again = run_job("test-words", tiny_checkpoint, {"lines": LINES}, cache_folder=tmp_path)
    assert again.cached and again.result == first.result and [len(LINES)] == RUNS       # nothing run again
    other = run_job("test-words", tiny_checkpoint, {"lines": LINES[:3]}, cache_folder=tmp_path)
    assert not other.cached and len(list(tmp_path.glob("test-words-*.json"))) == 2      # another corpus, another key
    run_job("test-words", tiny_checkpoint, {"lines": LINES[:4]}, cache_folder=None)      # None: never written
    assert len(list(tmp_path.glob("*"))) == 2
    with pytest.raises(ValueError, match="defined twice"):
        corpus_job("test-words")(type("Elsewhere", (), {"__module__": "somewhere.else"}))


@pytest.mark.slow
@pytest.mark.xdist_group("ray")     # one local Ray for the Ray tests, on one xdist worker
def test_a_registered_job_gives_the_same_answer_on_a_local_ray(tiny_checkpoint, local_ray, tmp_path):
    try:
        RUNS.clear()
        shared = run_job("test-words", tiny_checkpoint, {"lines": LINES}, workers=2, cache_folder=tmp_path)
        assert RUNS == []                                   # every shard ran in a worker, which imported this module
        assert shared.distributed.workers == 2 and shared.distributed.retried == 0
        assert shared.result == WordCounts(EXPECTED, 4)     # 2 shards a worker
        alone = run_job("test-words", tiny_checkpoint, {"lines": LINES}, cache_folder=None)
        assert alone.result.counts == shared.result.counts
        again = run_job("test-words", tiny_checkpoint, {"lines": LINES}, workers=2, cache_folder=tmp_path)
        assert again.cached and again.distributed is None and again.result == shared.result
    finally:
        let_workers_go()


def test_a_model_that_writes_nothing_is_sharded_too(tmp_path_factory):
    """Sharding groups sentences as the model decodes them together; a masked language model decodes nothing
    (it has no generation_batch) and is sharded a sentence a group, every line once."""
    from explorer.analyses.jobs.corpus_jobs import corpus_shards
    from explorer.models.loader import open_model
    from tests.hugging_face_models import saved_model

    bert = open_model(saved_model("bert", tmp_path_factory))
    lines = [f"A dog number {i} runs." for i in range(7)]
    evaluated = corpus_shards(bert, lines, None, parts=3)
    assert sorted(line for shard in evaluated for line in shard["sources"]) == sorted(lines) and len(evaluated) == 3
    faithful = registered("faithfulness").shard(bert, {"sentences": lines}, {}, 3)
    assert [line for shard in faithful for line in shard["sentences"]] == lines and len(faithful) == 3
