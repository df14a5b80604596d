"""A class on one laptop (issue 48): N students against one server started as the README's serve command starts it
(`start.sh --serve`, pages/launch.py, with a token), without a browser per student. Each student is one websocket
session speaking Streamlit's own protocol, as the browser does: it opens a view by its link (a page, a sentence, a
model, pruned heads, a head: BackMsg.rerun_script with the link's query string and page), waits for the script's
run to finish (ForwardMsg.script_finished), thinks, and opens the next view in the same session.

    .venv/bin/python -m benchmarks.class_load [--students 30] [--seconds 300] [--think 20] [--json]
    .venv/bin/python -m benchmarks.class_load --distinct 1000 [--json]     # memory after N distinct sentences
    .venv/bin/python -m benchmarks.class_load --servers 2 --students 60        # a larger class, two processes

With --servers N, N such servers run side by side and each student keeps to one of them (student k to server
k mod N), as a reverse proxy's sticky sessions keep a browser on one process; memory and CPU are their sums.

Unless --cold, the teacher first opens every page on the lecture's sentence (the models load, the teacher's
sentence is computed once), as before a lesson. Reports per page the p50, p95 and max seconds from the request to
the script's finish, the errors (an exception shown on the page, a run that never finished), the sessions dropped
(a closed connection), the server's resident memory over time and its CPU. Half the students are on the teacher's
sentence, the others on a caption of their own. Loopback only (the server listens on 127.0.0.1 here), bounded in
students, views and time; stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import secrets
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import psutil
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

import explorer.settings as settings
from benchmarks.measured import Measured
from explorer.pages.registry import PAGES

ROOT = Path(__file__).resolve().parents[1]

CORPUS = settings.CAPTIONS
TEACHER = "The animal didn't cross the street because it was too tired."
MODELS = ("h8", "h2", "h1")
PRUNED = ("", "", "cross.2.*", "enc.0.0,enc.1.3")          # most students prune nothing
HEADS = ("enc.1.6", "cross.2.5", "dec.0.3")
TEXT_PAGES = tuple(page for page in PAGES if page.reads != "image")
VIEW_TIMEOUT = 120.0          # a run that takes longer counts as an error
MAX_STUDENTS, MAX_SECONDS, MAX_SERVERS = 200, 3600, 8


@dataclass
class View:
    page: str                    # the page's URL path ("" for the default page)
    name: str                    # its name in the report
    query: dict


@dataclass
class Tally:
    seconds: dict[str, list[float]] = field(default_factory=dict)    # page → each view's time to finish
    timeline: list[tuple[float, float]] = field(default_factory=list)  # (when the view was asked, its seconds)
    errors: list[str] = field(default_factory=list)
    dropped: int = 0
    views: int = 0
    not_own: list[str] = field(default_factory=list)       # views whose page did not show their own sentence
    started: float = 0.0                                   # time.monotonic() when the class began


def captions() -> list[str]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip()]


def next_view(rng: random.Random, own_sentence: str, on_teachers: bool) -> View:
    page = rng.choice(TEXT_PAGES)
    query = {"sentence": TEACHER if on_teachers else own_sentence, "model": rng.choice(MODELS)}
    pruned = rng.choice(PRUNED)
    if pruned:
        query["pruned"] = pruned
    if rng.random() < 0.5:
        query["head"] = rng.choice(HEADS)
    return View(page.url_path, page.name, query)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(port: int, token: str) -> subprocess.Popen:
    """The README's serve command (start.sh runs the set-up, then explorer.pages.launch), listening on loopback only."""
    server = subprocess.Popen([sys.executable, "-m", "explorer.pages.launch", "--serve", "--port", str(port), "--token", token,
                               "--server.address", "127.0.0.1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise SystemExit("the server did not start within 60 s")


def run_request(view: View, token: str) -> bytes:
    message = BackMsg()
    message.rerun_script.query_string = urlencode({**view.query, "token": token})
    message.rerun_script.page_name = view.page
    return message.SerializeToString()


async def open_view(connection, view: View, token: str) -> tuple[float, str | None, bool]:
    """(seconds from the request to the script's finish, the error shown or None, whether the view showed its own
    sentence: the sentence box's text is in the messages the session received)."""
    started = time.perf_counter()
    await connection.send(run_request(view, token))
    error, own = None, False
    sentence = view.query["sentence"].encode()
    while True:
        raw = await asyncio.wait_for(connection.recv(), VIEW_TIMEOUT)
        own = own or sentence in raw
        forward = ForwardMsg.FromString(raw)
        if forward.HasField("delta") and forward.delta.HasField("new_element"):
            element = forward.delta.new_element
            if element.HasField("exception") and error is None:
                error = f"{view.name}: {element.exception.type}: {element.exception.message[:120]}"
        if forward.HasField("page_not_found") and error is None:
            error = f"{view.name}: page not found"
        if forward.HasField("script_finished"):
            if forward.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                continue            # the page asked for a rerun (st.rerun): the view is ready when that one ends
            return time.perf_counter() - started, error, own


def connect(port: int):
    """A new session, as a browser tab opening a link: the app reads a link's view when a session starts."""
    return websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                              origin=f"http://127.0.0.1:{port}", max_size=None, open_timeout=60, ping_interval=None)


async def student(number: int, port: int, token: str, until: float, think: float, sentence: str,
                  on_teachers: bool, tally: Tally) -> None:
    """Views one after another until the class ends, each by its link (a new session, the tab's last one closed),
    with a think time on the view between them."""
    rng = random.Random(number)
    await asyncio.sleep(rng.uniform(0, think))          # students arrive over the first think time
    while time.monotonic() < until:
        view = next_view(rng, sentence, on_teachers)
        try:
            async with connect(port) as connection:
                try:
                    seconds, error, own = await open_view(connection, view, token)
                except TimeoutError:
                    tally.errors.append(f"{view.name}: no finish within {VIEW_TIMEOUT:.0f} s")
                    continue
                tally.views += 1
                tally.seconds.setdefault(view.name, []).append(seconds)
                tally.timeline.append((time.monotonic() - seconds - tally.started, seconds))
                if error:
                    tally.errors.append(error)
                if not own:
                    tally.not_own.append(f"{view.name}: {view.query['sentence'][:40]}")
                await asyncio.sleep(max(0.0, rng.gauss(think, think / 4)))
        except (websockets.ConnectionClosed, OSError) as closed:
            tally.dropped += 1
            tally.errors.append(f"student {number}: connection lost ({closed.__class__.__name__})")


async def memory_walk(port: int, token: str, count: int, sentences: list[str], watch) -> dict:
    """One session opening `count` distinct 45-word sentences on the Attention page, one after another: resident
    memory after every 100 (a curve that levels off once every cache is full) and after all of them."""
    rng = random.Random(0)
    marks = {}
    for index in range(count):
        words = " ".join(rng.sample(sentences, 6)).split()[:44] + [str(index)]
        async with connect(port) as connection:
            await open_view(connection, View("attention", "attention", {"sentence": " ".join(words)}), token)
        if (index + 1) % 100 == 0 or index + 1 == count:
            marks[index + 1] = watch.rss_mb()
    return marks


class ServerWatch:
    """The servers' resident memory (MB, summed) every few seconds and their CPU seconds (summed)."""

    def __init__(self, *pids: int) -> None:
        self.processes = [psutil.Process(pid) for pid in pids]
        self.samples: list[tuple[float, float]] = []
        self.started = time.monotonic()
        self.cpu_start = self.cpu_seconds()

    def rss_mb(self) -> float:
        return round(sum(process.memory_info().rss for process in self.processes) / 2**20, 1)

    def cpu_seconds(self) -> float:
        return sum(times.user + times.system for times in (process.cpu_times() for process in self.processes))

    async def sample(self, every: float = 5.0) -> None:
        while True:
            self.samples.append((round(time.monotonic() - self.started, 1), self.rss_mb()))
            await asyncio.sleep(every)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def by_minute(timeline: list[tuple[float, float]]) -> dict[int, list[float]]:
    """Each view's seconds, grouped by the minute of the class it was asked in."""
    minutes: dict[int, list[float]] = {}
    for asked, seconds in timeline:
        minutes.setdefault(int(asked // 60), []).append(seconds)
    return minutes


def report(tally: Tally, watch: ServerWatch, students: int, seconds: float, wall: float) -> dict:
    every = [s for values in tally.seconds.values() for s in values]
    settled = [s for at, s in tally.timeline if at >= 60]
    cpu = watch.cpu_seconds() - watch.cpu_start
    return {
        "students": students, "seconds": seconds, "views": tally.views,
        "p50_s": round(statistics.median(every), 3) if every else None,
        "p95_s": round(percentile(every, 0.95), 3) if every else None,
        "max_s": round(max(every), 3) if every else None,
        "p95_s_after_the_first_minute": round(percentile(settled, 0.95), 3) if settled else None,
        "p95_s_by_minute": {minute: round(percentile(values, 0.95), 3)
                            for minute, values in sorted(by_minute(tally.timeline).items())},
        "errors": len(tally.errors), "error_examples": tally.errors[:5], "dropped": tally.dropped,
        "views_without_their_own_sentence": len(tally.not_own), "examples_without": tally.not_own[:5],
        "pages": {page: {"views": len(values), "p50_s": round(statistics.median(values), 3),
                         "p95_s": round(percentile(values, 0.95), 3), "max_s": round(max(values), 3)}
                  for page, values in sorted(tally.seconds.items())},
        "rss_mb_start": watch.samples[0][1] if watch.samples else watch.rss_mb(), "rss_mb_end": watch.rss_mb(),
        "rss_mb_max": max([mb for _, mb in watch.samples] or [watch.rss_mb()]),
        "rss_mb_over_time": watch.samples,
        "server_cpu_s": round(cpu, 1), "server_cores_busy": round(cpu / max(wall, 1e-9), 2),
        "cores": psutil.cpu_count(),
    }


async def teacher_first(port: int, token: str) -> float:
    """The teacher opens every page on the lecture's sentence before the class comes in, as a teacher preparing a
    lesson does: the models load and the teacher's sentence is computed once (seconds it took)."""
    started = time.monotonic()
    for page in TEXT_PAGES:
        async with connect(port) as connection:
            await open_view(connection, View(page.url_path, page.name, {"sentence": TEACHER}), token)
    return round(time.monotonic() - started, 1)


async def class_run(ports: list[int], token: str, students: int, seconds: float, think: float, watch: ServerWatch,
                    cold: bool) -> dict:
    """ports: one per server; student k keeps to server k mod their number (a proxy's sticky sessions). Unless
    cold, the teacher's run through the pages is made on each server (each process keeps its own cache)."""
    sampler = asyncio.create_task(watch.sample())
    prepared = None
    if not cold:
        prepared = sum([await teacher_first(port, token) for port in ports])
    own = random.Random(1).sample(captions(), students)
    started = time.monotonic()
    tally = Tally(started=started)
    until = started + seconds
    await asyncio.gather(*(student(n, ports[n % len(ports)], token, until, think, own[n], n % 2 == 0, tally)
                           for n in range(students)))
    sampler.cancel()
    return {"teacher_first_s": prepared, "servers": len(ports),
            **report(tally, watch, students, seconds, time.monotonic() - started)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=300.0, help="how long the class works")
    parser.add_argument("--think", type=float, default=20.0, help="seconds between a student's views, on average")
    parser.add_argument("--distinct", type=int, default=0,
                        help="instead of a class: one session opening N distinct 45-word sentences (memory)")
    parser.add_argument("--cold", action="store_true",
                        help="the students arrive at a server nobody has opened (no teacher's run through the pages)")
    parser.add_argument("--servers", type=int, default=1,
                        help="server processes side by side, each student keeping to one (sticky sessions)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object")
    args = parser.parse_args()
    if not 1 <= args.students <= MAX_STUDENTS or not 0 < args.seconds <= MAX_SECONDS:
        raise SystemExit(f"--students 1…{MAX_STUDENTS}, --seconds up to {MAX_SECONDS}")
    if not 1 <= args.servers <= MAX_SERVERS:
        raise SystemExit(f"--servers 1…{MAX_SERVERS}")
    token = secrets.token_urlsafe(12)
    ports, servers = [], []
    try:
        for _ in range(args.servers):
            ports.append(free_port())
            servers.append(start_server(ports[-1], token))
        watch = ServerWatch(*(server.pid for server in servers))
        port = ports[0]
        if args.distinct:
            marks = asyncio.run(memory_walk(port, token, args.distinct, captions(), watch))
            first, last = marks.get(100), marks.get(args.distinct)
            result = {"distinct_sentences": args.distinct, "rss_mb_after_100": first,
                      f"rss_mb_after_{args.distinct}": last,
                      "growth": round(last / first - 1, 3) if first and last else None, "rss_mb_by_count": marks}
        else:
            result = asyncio.run(class_run(ports, token, args.students, args.seconds, args.think, watch, args.cold))
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
    measured = (Measured("class_load", f"--distinct {args.distinct}", "class_load_memory") if args.distinct
                else Measured("class_load"))
    if args.distinct and result["growth"] is not None:
        measured.add(f"memory growth from 100 to {args.distinct} distinct sentences", 100 * result["growth"], "%", 10)
    elif not args.distinct:
        measured.add(f"a class of {args.students}: p95 request → page drawn", result["p95_s"], "s", 3)
        measured.add(f"a class of {args.students}: errors", result["errors"], "", 0)
    measured.save()
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
