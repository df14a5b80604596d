"""Corpus jobs on a local Ray with two workers (explorer/analyses/jobs/jobs.py, distributed.py): every command's result
equals the one-process result, a worker killed mid-run is replaced without losing or double-counting a shard, and a bad
Ray address is one clear line within seconds."""

import json
import os
import signal
import threading
import time
from types import SimpleNamespace

import pytest

import explorer.settings as settings
from explorer.analyses.corpus.corpus_scoring import scorer_for
from explorer.analyses.jobs.corpus_jobs import ShardedScoring
from explorer.analyses.jobs.distributed import RayRunner, model_files_stamp, translation_groups, workers_for
from explorer.analyses.jobs.jobs import OnRay
from explorer.analyses.sentence.faithfulness import ATTENTION_METHODS
from explorer.capture.head_sets import HeadSpec, head_mask
from explorer.cli import main
from explorer.models.checkpoint import Checkpoint
from explorer.models.data import read_parallel
from tests.conftest import MULTI30K
from tests.explorer.test_cli import cli
from tests.hugging_face_models import TEXT

pytestmark = pytest.mark.xdist_group("ray")    # one local Ray for these tests, on one xdist worker

UD = settings.TREEBANK


def run(capsys, *args) -> dict:
    capsys.readouterr()
    assert main(list(args)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def without_timing(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("seconds", "gradient_seconds", "distributed")}


@pytest.mark.slow
def test_every_command_gives_the_one_process_result_on_two_workers(tiny_checkpoint, local_ray, capsys, tmp_path,
                                                                  monkeypatch):
    model = str(tiny_checkpoint.path)
    # 8 pairs in generation batches of 4 here (64 in the workers, which translate a shard of one batch in one
    # batch, as here): two batches, so two shards, one for each worker. (70 pairs in batches of 64 took 4x longer,
    # and 16 in batches of 8 twice as long: importance masks every head on every pair.)
    monkeypatch.setattr(Checkpoint, "generation_batch", 4)
    pairs = ["--src", str(MULTI30K / "val.en.gz"), "--ref", str(MULTI30K / "val.de.gz"), "--limit", "8"]
    sources, references = read_parallel(MULTI30K / "val.en.gz", MULTI30K / "val.de.gz")
    assert [len(group) for group in translation_groups(tiny_checkpoint, sources[:8], references[:8])] == [4, 4]
    commands = {
        "evaluate": ["evaluate", "--model", model, *pairs, "--json"],
        "importance": ["importance", "--model", model, *pairs, "--json"],
        "roles": ["roles", "--model", model, "--text", str(MULTI30K / "val.en.gz"), "--conllu", str(UD),
                  "--limit", "30", "--json"],
    }
    for name, command in commands.items():
        alone, shared = run(capsys, *command), run(capsys, *command, "--workers", "2")
        assert shared["distributed"]["workers"] == 2 and shared["distributed"]["retried_jobs"] == 0
        assert_same(without_timing(shared), without_timing(alone), name)
        if name == "importance":
            (tmp_path / "importance.json").write_text(json.dumps(alone))
    # the head atlas's map and search (issue 62): shards of sentences, summed (the map) or kept in order (the search)
    for name, command in {"atlas": ["atlas", "--model", model, "--text", str(MULTI30K / "val.en.gz"), "--limit", "9",
                                    "--kind", "cross", "--json"],
                          "search-heads": ["search-heads", "--model", model, "--text", str(MULTI30K / "val.en.gz"),
                                           "--limit", "9", "--key", "previous", "--json"]}.items():
        alone, shared = run(capsys, *command), run(capsys, *command, "--workers", "2")
        assert shared["distributed"]["workers"] == 2
        assert_same(without_timing(shared), without_timing(alone), name)
    curve = ["prune-curve", "--model", model, *pairs, "--importance", str(tmp_path / "importance.json"),
             "--steps", "2", "--seeds", "1", "--kinds", "enc,all", "--json"]
    alone, shared = run(capsys, *curve), run(capsys, *curve, "--workers", "2")
    assert_same(without_timing(shared), without_timing(alone), "prune-curve")


@pytest.mark.slow
def test_faithfulness_gives_the_same_means_on_two_workers(tiny_checkpoint, local_ray, capsys, tmp_path):
    """(On this module's one local Ray: a second start cost ~5 s.)"""
    # 64 + 6 lines: two generation batches, one shard each; two scored sentences in each, the rest too short to
    # score (cheap: no gradient, no flow), and a blank line, which is no sentence
    lines = ["A."] * 70
    lines[0:2], lines[64:66] = TEXT[0:2], TEXT[2:4]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n\n")
    command = ["faithfulness", "--model", str(tiny_checkpoint.path), "--src", str(corpus), "--json"]
    alone, shared = run(capsys, *command), run(capsys, *command, "--workers", "2")
    assert shared["distributed"]["workers"] == 2
    assert alone["sentences"] == 4 and alone["skipped"] == {"fewer than 3 scorable tokens": 66}
    assert set(alone["methods"]) == {*ATTENTION_METHODS, "gradient_x_input"}
    for name in ("sentences", "skipped", "methods"):
        assert shared[name] == alone[name]


def assert_same(shared, alone, where: str) -> None:
    """Equal, except sums of floats (losses, gradients), which may differ in their last rounded digit. BLEU and
    chrF come from summed integer statistics and the very same translations: equal exactly."""
    if isinstance(alone, dict):
        assert set(shared) == set(alone), where
        for key in alone:
            assert_same(shared[key], alone[key], f"{where}.{key}")
    elif isinstance(alone, list):
        assert len(shared) == len(alone), where
        for i, (a, b) in enumerate(zip(shared, alone)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(alone, float) and not any(name in where for name in ("bleu", "chrf", "prune-curve")):
        assert shared == pytest.approx(alone, rel=1e-4, abs=2e-4), where
    else:
        assert shared == alone, where


def test_the_workers_stay_for_the_next_run_of_the_same_model_files(tiny_checkpoint, local_ray, tmp_path):
    """A second run of the same model reuses the workers (no new process opens the model again); a new Ray
    runner lets them go first, or its workers would wait forever for the CPUs they hold."""
    with workers_for(str(tiny_checkpoint.path), 2) as first:
        pids = first.pids()
    with workers_for(str(tiny_checkpoint.path), 2) as again:
        assert again is first and again.pids() == pids and again.startup_seconds == 0
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "weights.safetensors").write_bytes(b"one")
    stamp = model_files_stamp(str(folder))
    (folder / "weights.safetensors").write_bytes(b"other")            # the model retrained in place
    assert model_files_stamp(str(folder)) != stamp
    RayRunner(str(tiny_checkpoint.path), 2).close()                    # starts: the kept workers were let go
    assert first.actors == []


def test_a_failed_run_lets_its_workers_go(monkeypatch, tmp_path):
    """A run that raised may have left a worker broken: its workers are closed, not kept for the next run (the
    keeping itself, without Ray: a runner that records being closed)."""
    from explorer.analyses.jobs import distributed

    class Runner:
        def __init__(self, *arguments):
            self.closed, self.ray = False, SimpleNamespace(is_initialized=lambda: True)

        def close(self):
            self.closed = True

    monkeypatch.setattr(distributed, "RayRunner", Runner)
    monkeypatch.setattr(distributed, "_kept", {})
    with workers_for(str(tmp_path), 2) as kept:
        pass
    with workers_for(str(tmp_path), 2) as again:
        assert again is kept and not kept.closed
    with pytest.raises(RuntimeError, match="a run that failed"), workers_for(str(tmp_path), 2):
        raise RuntimeError("a run that failed")
    assert kept.closed
    with workers_for(str(tmp_path), 2) as fresh:
        assert fresh is not kept


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_every_shard_counted_once(tiny_checkpoint, local_ray, monkeypatch):
    monkeypatch.setattr(Checkpoint, "generation_batch", 8)       # as in the test above
    sources, references = read_parallel(MULTI30K / "val.en.gz", MULTI30K / "val.de.gz")
    sources, references = sources[:24], references[:24]        # 3 groups of batches: 3 shards, both workers busy
    assert len(translation_groups(tiny_checkpoint, sources, references)) == 3
    scorer = scorer_for(tiny_checkpoint, sources, references)
    sets = [[], [HeadSpec("encoder", 0, 1)], [HeadSpec("cross", 1, 2), HeadSpec("decoder", 0, 0)]]
    expected = [(scorer.loss(head_mask(s, scorer.model)), scorer.quality(head_mask(s, scorer.model))) for s in sets]
    # Each job waits 0.3 s first, so the victim is killed in its first job or, on a slow start, before it: either
    # way a job of its fails and is retried (9 jobs of 1 s each took 4.5 s of the suite).
    runner = RayRunner(str(tiny_checkpoint.path), 2, job_delay=0.3)
    victim = runner.pids()[0]
    killer = threading.Timer(0.15, lambda: os.kill(victim, signal.SIGKILL))
    killer.start()
    try:
        engine = ShardedScoring(OnRay(runner, tiny_checkpoint), scorer, {"sources": sources, "references": references})
        scores = engine.set_scores(sets, True)
    finally:
        killer.join()
        runner.close()
    assert runner.retried >= 1
    for (loss, quality), (expected_loss, expected_quality) in zip(scores, expected):
        assert quality == pytest.approx(expected_quality, abs=1e-9)
        assert loss == pytest.approx(expected_loss, rel=1e-5)


@pytest.mark.parametrize("address, message", [("127.0.0.1:1", "no Ray cluster answers"), ("nonsense", "HOST:PORT")])
def test_a_bad_ray_address_is_one_line_within_seconds(tiny_checkpoint, address, message):
    started = time.perf_counter()
    result = cli("evaluate", "--model", str(tiny_checkpoint.path), "--src", str(MULTI30K / "val.en.gz"),
                 "--ref", str(MULTI30K / "val.de.gz"), "--limit", "5", "--ray-address", address)
    assert result.returncode == 1 and time.perf_counter() - started < 15
    assert result.stderr.startswith("error:") and message in result.stderr and len(result.stderr.splitlines()) == 1
