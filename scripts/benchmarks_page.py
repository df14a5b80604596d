"""Write docs/benchmarks.md from what the benchmarks measured (docs/measurements/*.json, written by
benchmarks/measured.py): a table a benchmark, a row a figure, a miss in bold. Run after a benchmark, so the page
shows its last run; a test fails when the page and the files disagree.

    .venv/bin/python -m scripts.benchmarks_page
"""

from __future__ import annotations

import json
from pathlib import Path

from scripts.docs_tables import cell

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks.md"
FOLDER = ROOT / "docs" / "measurements"
# The order of the page: what a person waits for first, then the analyses, then the machinery.
ORDER = ("page_changes", "cold_links", "browser_views", "class_load", "class_load_memory", "explain", "analysis",
         "replication", "speed")
INTRODUCTION = """# Benchmarks

Each table is one benchmark's last run, as it wrote it to `docs/measurements/` (a JSON file a benchmark: the
command, the date, the commit, the machine's cores, each figure with its target). This page is generated from those
files by `python -m scripts.benchmarks_page`; a test fails when they disagree. Misses are in **bold**.

The machine's speed moves by up to 1.6× from day to day: compare figures from one run. What the figures mean and how
they were reached: [Speed](speed.md); older figures: [the changelog](changelog.md).
"""


def shown(value: float, unit: str) -> str:
    """A figure as the page writes it: three significant digits below 10 (0.002 s, 1.39 s), one decimal above."""
    number = f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
    if unit == "%":
        return f"{value:+.2f}%"
    return f"{number} {unit}".strip()


def target(value: float, unit: str) -> str:
    return f"≤ {value:g}{unit if unit == '%' else f' {unit}'.rstrip()}"


def section(document: dict) -> list[str]:
    seeded = f" {document['note']}" if document.get("note") else ""
    commit = f"commit {document['commit']}" if document["commit"] != "—" else "a commit not recorded"
    lines = [f"## `{document['command']}`", "",
             f"Measured {document['measured']} at {commit} on {document['cores']} cores.{seeded}", "",
             "| figure | measured | target |", "| --- | --- | --- |"]
    for figure in document["figures"]:
        value = shown(figure["value"], figure["unit"])
        lines.append(f"| {cell(figure['name'])} | {value if figure['met'] else f'**{value}**'} | "
                     f"{target(figure['at_most'], figure['unit'])} |")
    return lines + [""]


def page() -> str:
    documents = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in FOLDER.glob("*.json")}
    names = [name for name in ORDER if name in documents] + sorted(set(documents) - set(ORDER))
    return "\n".join([INTRODUCTION] + [line for name in names for line in section(documents[name])]).rstrip() + "\n"


if __name__ == "__main__":
    PAGE.write_text(page(), encoding="utf-8")
    print(f"{PAGE.relative_to(ROOT)} written")
