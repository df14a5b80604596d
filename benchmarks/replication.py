"""The replication bench as a user runs it: `python -m explorer replicate --model M --json` with the shipped budget,
timed from start to finish (target ≤ 120 s on this 2-core machine), and its output compared with the model's
shipped replication.json (they must be equal: every measurement is seeded or exact).

    .venv/bin/python -m benchmarks.replication [--models models/en-de-h8,models/en-de-h2,models/en-de-h1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.measured import Measured

ROOT = Path(__file__).resolve().parents[1]
TARGET = 120.0


def differences(ours, shipped, path: str = "") -> list[str]:
    """Where two JSON values differ, as paths."""
    if isinstance(ours, dict) and isinstance(shipped, dict):
        return [d for key in sorted(set(ours) | set(shipped), key=str)
                for d in differences(ours.get(key), shipped.get(key), f"{path}.{key}")]
    if isinstance(ours, list) and isinstance(shipped, list) and len(ours) == len(shipped):
        return [d for i, (a, b) in enumerate(zip(ours, shipped)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if ours == shipped else [path or "(whole)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="models/en-de-h8,models/en-de-h2,models/en-de-h1")
    args = parser.parse_args()
    measured = Measured("replication")
    for model in args.models.split(","):
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "explorer", "replicate", "--model", model, "--json"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - started
        ours = json.loads(run.stdout)
        shipped = json.loads((ROOT / model / "replication.json").read_text())
        found = differences(ours, shipped)
        print(f"{model}: {seconds:.1f} s (target ≤ {TARGET:.0f} s {'ok' if seconds <= TARGET else 'MISSED'}), "
              f"{len(ours['papers'])} papers, {ours['sentences']} sentences a heavy measurement, "
              f"equal to the shipped replication.json: "
              + ("yes" if not found else f"NO, at {', '.join(found[:5])}"), flush=True)
        measured.add(f"`explorer replicate`, {Path(model).name}, the shipped budget", seconds, "s", TARGET)
    measured.save()


if __name__ == "__main__":
    main()
