"""Benchmarks write their figures as data: docs/measurements/BENCHMARK.json holds the command that measured them, the
date, the commit, the machine's cores, and each figure with its unit, its target and whether it met it.
scripts/speed_table.py turns those files into docs/speed.md's table of targets, so the page shows what the last run
measured, not what someone copied.

    measured = Measured("analysis", "--model en-de-h8")
    measured.add("roles, 1,000 EWT sentences", 28.3, "s", at_most=30)
    measured.save()
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "docs" / "measurements"


@dataclass
class Figure:
    name: str
    value: float
    unit: str               # "s", "×" (a ratio), "%"
    at_most: float          # the target: the value must not pass it
    met: bool


@dataclass
class Measured:
    benchmark: str          # its module in benchmarks/
    arguments: str = ""     # what the command was given beside its defaults
    name: str = ""          # the file's name when one benchmark writes two (default: the benchmark's)
    figures: list[Figure] = field(default_factory=list)

    def add(self, name: str, value: float, unit: str, at_most: float) -> None:
        self.figures.append(Figure(name, round(float(value), 3), unit, at_most, bool(value <= at_most)))

    def save(self) -> Path:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        command = f".venv/bin/python -m benchmarks.{self.benchmark} {self.arguments}".strip()
        document = {"benchmark": self.name or self.benchmark, "command": command, "measured": date.today().isoformat(),
                    "commit": commit, "cores": os.cpu_count(), "figures": [asdict(item) for item in self.figures]}
        FOLDER.mkdir(parents=True, exist_ok=True)
        path = FOLDER / f"{self.name or self.benchmark}.json"
        path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"written: {path.relative_to(ROOT)}")
        return path
