"""How many torch threads should the app's server use? One sentence traced (translate + capture every hook),
as the app does it, under the loads a server meets.

    .venv/bin/python -m benchmarks.threads [--rounds 12]

For torch threads 1 and 2 (the app's ATTENTION_EXPLORER_THREADS; this machine has 2 cores) it prints the median
and worst seconds per sentence: alone on a quiet machine; two sessions at once (two Python threads tracing
together, which is how Streamlit serves two browser sessions from one process); and alone with one core busy
(another process spinning). Run it on an otherwise idle machine: the "busy" load is the benchmark's own.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import threading
import time
from pathlib import Path

import torch

from explorer.capture.trace import trace_sentence
from explorer.models.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]

SENTENCES = [
    "A young man in a red jacket is playing the guitar on a busy street at night.",
    "Two small dogs are running through the tall green grass next to a river.",
    "An old woman with a blue umbrella is walking past a bakery in the rain.",
    "Three children in yellow shirts are jumping into a swimming pool together.",
]


def spin(stop) -> None:
    while not stop.is_set():
        pass


def session(checkpoint, rounds: int, offset: int, times: list[float]) -> None:
    for i in range(rounds):
        started = time.perf_counter()
        trace_sentence(checkpoint, SENTENCES[(i + offset) % len(SENTENCES)])
        times.append(time.perf_counter() - started)


def measure(checkpoint, rounds: int, sessions: int, busy_core: bool) -> list[float]:
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=spin, args=(stop,)) if busy_core else None
    if spinner:
        spinner.start()
        time.sleep(0.5)
    times: list[float] = []
    workers = [threading.Thread(target=session, args=(checkpoint, rounds, n, times)) for n in range(sessions)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if spinner:
        stop.set()
        spinner.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "en-de-h8")
    args = parser.parse_args()
    checkpoint = load_checkpoint(args.model)
    session(checkpoint, 3, 0, [])                                     # warm-up
    print(f"{checkpoint.name}: seconds per sentence traced (translate + capture), {args.rounds} per session, "
          f"{multiprocessing.cpu_count()} cores")
    print(f"{'torch threads':>13} {'load':<28} {'median':>7} {'worst':>7}")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for load, sessions, busy in (("alone, quiet", 1, False), ("two sessions at once", 2, False),
                                     ("alone, one core busy", 1, True)):
            times = measure(checkpoint, args.rounds, sessions, busy)
            print(f"{threads:>13} {load:<28} {statistics.median(times):>7.3f} {max(times):>7.3f}")


if __name__ == "__main__":
    main()
