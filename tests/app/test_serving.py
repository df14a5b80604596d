"""A served explorer (`start.sh --serve`) is read-only for visitors: every way in that would make the server open a
folder, read a file, or reach a Ray address a visitor names is refused in one line, and nothing is opened."""

import pytest
from streamlit.testing.v1 import AppTest

from explorer.pages.components import access
from tests.app.conftest import open_page
from tests.conftest import MULTI30K, ROOT

SENTENCE = "Two dogs play in the snow."
TOKEN = "class-token-42"


@pytest.fixture
def served(monkeypatch):
    """Serve mode as `start.sh --serve --token TOKEN` sets it; files opened by the app are recorded."""
    monkeypatch.setenv(access.SERVE, "1")
    monkeypatch.setenv(access.TOKEN, TOKEN)
    access.policy.cache_clear()
    opened = []
    import explorer.models.data
    import explorer.pages.components.caches
    import explorer.pages.components.corpus_inputs
    real_open, real_bytes = explorer.pages.components.caches.open_model, explorer.models.data.file_bytes
    monkeypatch.setattr(explorer.pages.components.caches, "open_model",
                        lambda path, **options: opened.append(str(path)) or real_open(path, **options))
    monkeypatch.setattr(explorer.pages.components.corpus_inputs, "file_bytes",
                        lambda path: opened.append(str(path)) or real_bytes(path))
    yield opened
    monkeypatch.undo()
    access.policy.cache_clear()


def visit(page: str = "translation.py", token: str | None = TOKEN, **query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    at.query_params.update({"sentence": SENTENCE, **query} | ({"token": token} if token else {}))
    at.run()
    if page != "translation.py" and not at.exception:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_link_naming_a_server_folder_is_refused_and_never_opened(served, caplog):
    access.log.addHandler(caplog.handler)
    at = visit(model="/etc")
    assert any("not “/etc”" in w.value and "default model" in w.value for w in at.warning)
    assert at.selectbox(key="model").value == "8 heads (en-de-h8)"
    assert "/etc" not in served and not any(path.startswith("/etc") for path in served)
    assert "Your own checkpoint folder…" not in at.selectbox(key="model").options     # no free-text folder box
    assert "own_model" not in [box.key for box in at.text_input]
    access.log.removeHandler(caplog.handler)
    refusals = [r for r in caplog.records if r.name == access.log.name]
    assert len(refusals) == 1 and "“/etc”" in refusals[0].getMessage() and "\n" not in refusals[0].getMessage()
    assert refusals[0].exc_info is None and refusals[0].stack_info is None        # one line, no traceback


def test_a_bundled_model_by_its_short_name_still_opens(served):
    at = visit(model="h2")
    assert at.selectbox(key="model").value == "2 heads (en-de-h2)" and not at.warning


def test_a_visitor_cannot_name_corpus_files_or_a_ray_address(served):
    at = visit("heads.py")
    at.session_state["heads_recompute"] = True          # "Recompute on your own corpus" opened: drawn only then
    at.run()
    labels = [box.label for box in at.text_input]
    assert "… or its path on the server" not in labels and "Ray cluster address (optional)" not in labels
    assert not [box for box in at.number_input if box.label == "Workers"]
    assert any("as this server's host set it" in c.value for c in at.caption)
    assert any("the bundled val.en.gz is used" in c.value for c in at.caption)
    at = visit("prune.py")
    assert "… or its path on the server" not in [box.label for box in at.text_input]


@pytest.mark.slow
def test_a_forged_corpus_path_in_the_session_is_never_read(served):
    """Even a session state holding a path (as the path box would on one's own machine) is not read when served:
    the bundled corpus is scored instead."""
    at = visit("prune.py", pruned="cross.2.0")          # a head pruned: the corpus section is offered
    at.session_state["prune_src_path"] = "/etc/passwd"
    at.radio(key="prune_corpus").set_value("BLEU against references").run()
    at.number_input(key="prune_limit").set_value(10).run()
    at.button(key="prune_score").click().run()
    assert not at.exception
    assert "/etc/passwd" not in served
    assert {p for p in served if p.endswith(".gz")} == {str(MULTI30K / "val.en.gz"), str(MULTI30K / "val.de.gz")}
    assert [m for m in at.metric if "first 10 pairs of val.en.gz" in m.label]


@pytest.mark.slow
def test_more_models_from_a_link_are_refused_on_compare(served):
    at = visit("compare.py", compare_others="/etc\n/root")
    assert any("compares only its own models" in w.value and "/etc" in w.value for w in at.warning)
    assert not [a for a in at.text_area if a.key == "compare_others"]
    assert not any(path.startswith(("/etc", "/root")) for path in served)


@pytest.mark.parametrize("token, message", [(None, "shared with an access token"), ("wrong", "not this server's")])
def test_without_the_token_nothing_but_the_token_box_is_shown(served, token, message):
    at = visit(token=token)
    assert any(message in m.value for m in list(at.info) + list(at.warning))
    assert [box.label for box in at.text_input] == ["Access token"]
    assert not at.text_area and not at.selectbox            # no sidebar, no page
    at.text_input[0].input("also wrong").run()
    assert any("not this server's access token" in w.value for w in at.warning) and not at.selectbox
    at.text_input[0].input(TOKEN).run()
    assert at.selectbox(key="model").value == "8 heads (en-de-h8)"
    assert at.query_params["token"] in (TOKEN, [TOKEN])      # kept in the link: a reload opens the same view


@pytest.mark.slow
def test_on_ones_own_machine_the_folder_box_is_offered(monkeypatch):
    monkeypatch.delenv(access.SERVE, raising=False)
    access.policy.cache_clear()
    at = open_page("translation.py", SENTENCE)
    assert "Your own checkpoint folder…" in at.selectbox(key="model").options
    at = open_page("prune.py", SENTENCE, **{"prune_en-de-h8_cross.2": [0]})      # a head pruned: a corpus offered
    at.radio(key="prune_corpus").set_value("BLEU against references").run()
    assert "… or its path on the server" in [box.label for box in at.text_input]


def test_the_default_start_listens_on_this_machine_only_and_serve_on_every_interface(tmp_path):
    from explorer.pages.launch import environment, parse, streamlit_command

    options, passed_on = parse(["--server.fileWatcherType", "none"])
    command = streamlit_command(options, passed_on)
    assert command[command.index("--server.address") + 1] == "127.0.0.1" and command[-2:] == passed_on
    assert environment(options)[access.SERVE] == "0"
    options, passed_on = parse(["--serve", "--port", "9000", "--models", str(tmp_path), "--workers", "3"])
    command = streamlit_command(options, passed_on)
    assert command[command.index("--server.address") + 1] == "0.0.0.0"
    assert command[command.index("--server.port") + 1] == "9000"
    assert command[command.index("--client.toolbarMode") + 1] == "viewer"       # no visitor clears the caches
    settings = environment(options)
    assert settings[access.SERVE] == "1" and settings[access.WORKERS] == "3" and len(settings[access.TOKEN]) >= 20
    assert settings[access.MODELS] == str(tmp_path.resolve())
    assert environment(parse(["--serve", "--no-token"])[0])[access.TOKEN] == ""


def test_the_server_gets_one_blas_thread_unless_the_host_chose(monkeypatch):
    """numpy's small products waited on a second OpenBLAS thread of a busy core: the launcher sets one in the
    server's environment before it starts (and imports numpy), and keeps a number the host set."""
    from explorer.pages import launch

    started = []
    monkeypatch.setattr(launch.os, "environ", dict(launch.os.environ))       # main() writes the server's settings
    monkeypatch.setattr(launch.os, "execv", lambda path, command: started.append(dict(launch.os.environ)))
    for host, expected in ((None, "1"), ("4", "4")):
        launch.os.environ.pop("OPENBLAS_NUM_THREADS", None)
        if host:
            launch.os.environ["OPENBLAS_NUM_THREADS"] = host
        launch.main([])
        assert started[-1]["OPENBLAS_NUM_THREADS"] == expected


@pytest.mark.parametrize("argv, message", [(["--models", "/no/such/folder"], "/no/such/folder: no such folder"),
                                           (["--jobs", "0"], "--jobs 0: must be at least 1")])
def test_a_bad_start_option_is_named(argv, message, capsys):
    from explorer.pages.launch import parse

    with pytest.raises(SystemExit):
        parse(argv)
    assert message in capsys.readouterr().err


def test_corpus_jobs_queue_first_come_first_served():
    from explorer.pages.components.jobs import JobQueue

    queue = JobQueue(slots=1)
    first, second, third = queue.join("a"), queue.join("b"), queue.join("c")
    assert queue.ahead(second) == 1 and queue.ahead(third) == 2     # the first has not started yet: it waits first
    assert queue.ahead(first) is None                               # it starts
    assert queue.ahead(second) == 1 and queue.ahead(third) == 2 and queue.busy("a") and not queue.busy("d")
    queue.leave(first)
    assert queue.ahead(third) == 1 and queue.ahead(second) is None and queue.ahead(third) == 1
    queue.leave(second)
    assert queue.ahead(third) is None and not queue.busy("a")


def test_many_threads_never_run_more_jobs_than_the_slots():
    import threading
    import time

    from explorer.pages.components.jobs import JobQueue

    queue, lock, running, most = JobQueue(slots=2), threading.Lock(), [0], [0]

    def job(name):
        ticket = queue.join(name)
        while queue.ahead(ticket) is not None:
            time.sleep(0.001)
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        queue.leave(ticket)

    threads = [threading.Thread(target=job, args=(f"s{i}",)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 2 and running[0] == 0


@pytest.mark.slow
def test_a_corpus_job_whose_ray_worker_died_says_so_on_the_page(monkeypatch, tmp_path):
    """The CLI notes shards retried after a Ray worker died (tests/explorer: a real worker killed); the page does
    too. Here a runner runs each shard as a Ray worker would (ShardWorker.run, in this process) and reports two of
    them retried."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    import explorer.analyses.corpus.shipped_analyses
    import explorer.analyses.jobs.distributed
    from explorer.analyses.jobs.distributed import ShardWorker
    from explorer.models.loader import open_model

    class RunnerThatLostOne:
        workers, startup_seconds = 2, 0.0

        def __init__(self, path):
            self.worker, self.retried = SimpleNamespace(checkpoint=open_model(path), job_delay=0.0), 0

        def run(self, jobs, progress=None):
            self.retried += 2
            return [ShardWorker.run(self.worker, job) for job in jobs]

    @contextmanager
    def workers_that_lost_one(path, workers=1, address=None):
        yield RunnerThatLostOne(path)

    monkeypatch.setattr(explorer.analyses.jobs.distributed, "workers_for", workers_that_lost_one)
    monkeypatch.setattr(explorer.analyses.corpus.shipped_analyses, "CACHE", tmp_path)
    monkeypatch.delenv(access.SERVE, raising=False)
    access.policy.cache_clear()
    at = open_page("prune.py", SENTENCE, prune_curve_compute=True)       # its expander open
    at.number_input(key="curve_steps").set_value(2)
    at.number_input(key="curve_seeds").set_value(0)
    at.number_input(key="curve_pairs").set_value(10)
    at.multiselect(key="curve_kinds").set_value(["enc"])
    next(button for button in at.button if button.label == "Compute the curve").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("2 shards were retried on a fresh Ray worker" in i.value for i in at.info)
    assert list(tmp_path.glob("curve-*.json"))          # computed here, not read from an earlier run


@pytest.mark.slow
def test_a_visitors_corpus_job_waits_for_the_one_running(served):
    """Served with --jobs 1: while another session's job runs, this one's waits its turn, then runs."""
    import threading
    import time

    from explorer.pages.components.jobs import server_queue

    at = visit("prune.py", pruned="cross.2.0")
    at.radio(key="prune_corpus").set_value("BLEU against references").run()
    at.number_input(key="prune_limit").set_value(10).run()
    queue = server_queue(1)
    other = queue.join("another session")
    assert queue.ahead(other) is None                       # it runs
    threading.Timer(2.0, queue.leave, args=(other,)).start()
    start = time.perf_counter()
    at.button(key="prune_score").click().run()
    assert time.perf_counter() - start >= 2.0               # waited for the other job to end
    assert not at.exception and [m for m in at.metric if "first 10 pairs" in m.label]
    following = queue.join("next")
    assert queue.ahead(following) is None           # nothing left running: the next job starts at once
    queue.leave(following)


def test_a_closed_tabs_session_is_let_go_within_a_minute():
    """Streamlit keeps a session whose tab went away for 120 s by default: a server opened by many visitors one
    after another held ~240 of them (benchmarks/class_load.py --distinct). The view lives in the URL, so a tab
    that comes back later opens on it anyway."""
    import tomllib

    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert 0 < settings["server"]["disconnectedSessionTTL"] <= 60
