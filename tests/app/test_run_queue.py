"""At most as many page runs at once as there are slots, first come first served, and a waiting run is told its
place and an estimate (pages/components/run_queue.py)."""

import threading
import time

import pytest

from explorer.pages.components.run_queue import RunQueue, queued_message


def test_runs_never_exceed_the_slots_and_start_in_arrival_order():
    queue = RunQueue(2)
    peak, started, told = [0], [], []
    lock = threading.Lock()

    def run(name: str) -> None:
        with queue.turn(lambda ahead, seconds: told.append((name, ahead))):
            with lock:
                started.append(name)
                peak[0] = max(peak[0], queue.running)
            time.sleep(0.05)

    threads = []
    for number in range(8):
        threads.append(threading.Thread(target=run, args=(f"run {number}",)))
        threads[-1].start()
        time.sleep(0.005)                    # arrivals in order
    for thread in threads:
        thread.join(10)
    assert peak[0] == 2 and queue.running == 0 and not queue.waiting
    assert started == [f"run {number}" for number in range(8)]
    # The first two found a free slot and were told nothing; each later one was told its place in the line.
    assert [name for name, _ in told] == [f"run {number}" for number in range(2, 8)]
    assert [ahead for _, ahead in told] == sorted(ahead for _, ahead in told) and told[0][1] == 0


def test_the_estimate_is_the_typical_run_once_per_round_of_the_slots():
    queue = RunQueue(2)
    queue.durations.extend([0.5, 3.0, 1.0])
    assert queue.estimate(0) == 1.0 and queue.estimate(1) == 1.0 and queue.estimate(2) == 2.0
    assert queue.estimate(5) == 3.0


@pytest.mark.slow
def test_before_any_run_has_finished_the_estimate_is_the_longest_running_one():
    queue = RunQueue(1)
    assert queue.estimate(0) == 1.0                            # nothing has run: the fixed first guess
    release = threading.Event()

    def heavy() -> None:
        with queue.turn(lambda *_: None):
            release.wait(10)

    thread = threading.Thread(target=heavy)
    thread.start()
    time.sleep(1.6)                                            # a heavy first view, still running
    assert 1.6 <= queue.estimate(0) < 3.0 and 3.2 <= queue.estimate(1) < 6.0
    release.set()
    thread.join(10)
    assert queue.estimate(0) == queue.durations[0] >= 1.6      # once one has finished, the runs' median


def test_a_queued_student_reads_the_place_and_the_wait():
    assert "yours is next" in queued_message(0, 0.2) and "about 1 s" in queued_message(0, 0.2)
    assert "behind 3 other views" in queued_message(3, 6.4) and "about 6 s" in queued_message(3, 6.4)
    assert "behind 1 other view," in queued_message(1, 2.0)


def test_a_run_that_fails_gives_its_slot_back():
    queue = RunQueue(1)
    try:
        with queue.turn(lambda *_: None):
            raise RuntimeError("a page's error")
    except RuntimeError:
        pass
    assert queue.running == 0
    with queue.turn(lambda *_: (_ for _ in ()).throw(AssertionError("told to wait with a free slot"))):
        assert queue.running == 1


@pytest.fixture
def serving(monkeypatch):
    """Set whether the explorer is served as `start.sh --serve` does (its environment), never by replacing
    access.policy: a module first imported during the test would keep the replacement for the rest of the run."""
    from explorer.pages.components import access

    def serve(on: bool) -> None:
        if on:
            monkeypatch.setenv(access.SERVE, "1")
        else:
            monkeypatch.delenv(access.SERVE, raising=False)
        access.policy.cache_clear()

    yield serve
    monkeypatch.undo()
    access.policy.cache_clear()


@pytest.mark.slow
def test_a_page_run_that_finds_the_cores_busy_waits_and_says_so(monkeypatch, serving):
    """On a served explorer, the app's run waits for a slot held elsewhere, after telling its place; once the slot is
    free it draws the page, and the notice is gone."""
    from explorer.pages.components import caches, run_queue
    from tests.app.conftest import open_page

    started_already = threading.Event()
    started_already.set()
    monkeypatch.setattr(caches, "_WARMING", started_already)       # no model warm-up in this test's process
    serving(True)                                                   # a class's server
    queue, told, release = RunQueue(1), [], threading.Event()
    monkeypatch.setattr(run_queue, "RUNS", queue)
    monkeypatch.setattr(run_queue, "queued_message", lambda ahead, seconds: told.append((ahead, seconds)) or "queued")
    holding = threading.Event()

    def another_students_run():
        with queue.turn(lambda *_: None):
            holding.set()
            release.wait(30)

    other = threading.Thread(target=another_students_run)
    other.start()
    holding.wait(10)
    waited = []

    def end_the_other_run_once_this_one_waits():
        while not queue.waiting:
            time.sleep(0.02)
        started = time.perf_counter()
        time.sleep(0.5)
        waited.append(started)
        release.set()

    threading.Thread(target=end_the_other_run_once_this_one_waits).start()
    at = open_page("translation.py", "A dog runs.")
    # Next in line; no run has finished, so the other run's time so far, 1 s at least.
    assert waited and [ahead for ahead, _ in told] == [0] and 1.0 <= told[0][1] < 30
    assert not [box for box in at.info if box.value == "queued"] and queue.running == 0       # drawn, notice gone
    other.join(10)


@pytest.mark.slow
def test_a_served_explorer_loads_its_models_for_the_class_once_in_the_background(monkeypatch):
    import explorer.settings as settings
    from explorer.pages.components import caches
    from explorer.pages.components.access import Policy
    from explorer.service import ModelRef, TraceService

    monkeypatch.setattr(caches, "policy", lambda: Policy(serving=True))
    monkeypatch.setattr(caches, "_WARMING", threading.Event())
    monkeypatch.setattr(caches, "SERVICE", TraceService(opener=caches.open_for_this_server))
    before = [thread for thread in threading.enumerate() if thread.name == "warm-up-models"]
    caches.warm_up_models()
    caches.warm_up_models()                      # a second visitor starts nothing more
    warming = [thread for thread in threading.enumerate() if thread.name == "warm-up-models" and thread not in before]
    assert len(warming) == 1
    warming[0].join(120)
    refs = [ModelRef.of(bundled.folder) for bundled in settings.BUNDLED]
    assert all(caches.SERVICE.is_open(ref) for ref in refs)
    assert caches.cached_model(refs[0]) is caches.SERVICE.model(refs[0])      # a session finds it open


def test_on_ones_own_machine_nothing_is_loaded_ahead(monkeypatch):
    from explorer.pages.components import caches
    from explorer.pages.components.access import Policy

    monkeypatch.setattr(caches, "policy", lambda: Policy(serving=False))
    monkeypatch.setattr(caches, "_WARMING", threading.Event())
    caches.warm_up_models()
    assert not caches._WARMING.is_set()


def test_a_corpus_job_sets_its_slot_aside_so_the_class_goes_on():
    """One slot: a run starting a long corpus job gives its slot to another student's run meanwhile, and takes one
    again, in line, once the job is over."""
    queue, order = RunQueue(1), []
    aside, other_done = threading.Event(), threading.Event()

    def job_run():
        with queue.turn(lambda *_: None):
            with queue.set_aside():
                aside.set()
                other_done.wait(10)              # the job runs while another student's view is drawn
                order.append("job done")
            order.append("job's page drawn")
            assert queue.running == 1

    def other_run():
        aside.wait(10)
        with queue.turn(lambda *_: order.append("other told to wait")):
            order.append("other drawn")
        other_done.set()

    threads = [threading.Thread(target=job_run), threading.Thread(target=other_run)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert order == ["other drawn", "job done", "job's page drawn"] and queue.running == 0 and not queue.holders
    with queue.set_aside():                        # a thread holding no slot gives nothing back
        assert queue.running == 0


def test_on_ones_own_machine_page_runs_are_not_queued(monkeypatch, serving):
    from explorer.pages.components import run_queue
    from tests.app.conftest import open_page

    serving(False)
    queue = RunQueue(1)
    monkeypatch.setattr(run_queue, "RUNS", queue)
    with queue.turn(lambda *_: None):            # every slot taken: a served page would wait
        open_page("translation.py", "A dog runs.")
    assert list(queue.durations)[:-1] == [] and not queue.waiting
