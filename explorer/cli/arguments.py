"""What the command line's subcommands share: argument types, the Ray options and a progress bar. A leaf module, so
explorer/cli/__init__.py and the analyses' own command modules (explorer/cli_*.py) import it without an import cycle."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

MODEL_HELP = ("a bundled model's name (en-de-h8, en-de-h2, en-de-h1, digits-vit), a checkpoint folder, a Hugging Face "
              "folder, a hub id (e.g. Helsinki-NLP/opus-mt-en-de, gpt2: downloaded into the Hugging Face cache on "
              "first use), or an installed model's name (all-MiniLM-L6-v2)")


def with_model_path(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--model", required=True, type=Path, help=MODEL_HELP)
    sub.add_argument("--device", default="auto", metavar="{cpu,cuda,auto}",
                     help="where the model runs: cpu, cuda (or cuda:N), or auto, a GPU when torch sees one "
                          "(default)")
    sub.add_argument("--offline", action="store_true",
                     help="never download: a hub id must be in the Hugging Face cache already (as HF_HUB_OFFLINE=1)")


def with_json(sub: argparse.ArgumentParser, *keys: str) -> None:
    """--json, naming the keys every object has (docs/cli-and-notebook.md holds each command's whole schema; a test
    keeps the two agreeing)."""
    sub.add_argument("--json", action="store_true",
                     help="print exactly one JSON object, {" + ", ".join(f'"{key}"' for key in keys) + ", …} (its "
                          "schema: docs/cli-and-notebook.md)")


def with_casing(sub: argparse.ArgumentParser) -> None:
    """--recase: text is read as typed unless asked (the same string gives the same token ids everywhere)."""
    sub.add_argument("--recase", action="store_true",
                     help="feed an all-caps or all-lower-case sentence in sentence case, as the bundled translators' "
                          "training captions are written (by default the text is read exactly as typed)")
    # the default since 2026-11-29; the flag stays so that older scripts still run
    sub.add_argument("--keep-casing", action="store_true", help=argparse.SUPPRESS)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1, got {text!r}")
    return value


def with_workers(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--workers", type=positive_int, default=1,
                     help="split the corpus over this many worker processes on Ray (default 1: this process, "
                          "without Ray)")
    sub.add_argument("--ray-address", metavar="ADDR",
                     help="run the workers on the Ray cluster at ADDR (HOST:PORT as `ray start --head` prints, or "
                          "ray://HOST:10001); the model path must be readable on its nodes")


def distribution_note(runner, result: dict) -> None:
    """Say in the result (and on stderr, when jobs were retried) how the work was spread."""
    if runner is None:
        return
    result["distributed"] = {"workers": runner.workers, "retried_jobs": runner.retried,
                             "ray_startup_seconds": round(runner.startup_seconds, 2)}
    if runner.retried:
        print(f"note: {runner.retried} job(s) retried on a fresh worker after a worker died; every shard was "
              "counted once", file=sys.stderr)


def progress_bar(description: str):
    """A tqdm bar on stderr driven by a 0..1 progress callback."""
    from tqdm import tqdm

    bar = tqdm(total=100, desc=description, file=sys.stderr, leave=False, disable=None,
               bar_format="{l_bar}{bar}| {elapsed}")
    return bar, lambda fraction: bar.update(round(100 * fraction) - bar.n)
