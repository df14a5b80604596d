"""Rewrite the list of registered analyses in docs/analyses.md (explorer/analyses/registry.py): a row per analysis
with its command, what it measures, its options and what it reads. Run after adding one, so the page and the registry
cannot disagree (tests/explorer/test_registered_analyses.py checks it).

    .venv/bin/python -m scripts.analyses_table
"""

from __future__ import annotations

from pathlib import Path

from explorer.analyses.registry import registered
from explorer.cli.registered import flag
from scripts.docs_tables import cell, rewrite_table

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "analyses.md"
HEADER = "| analysis | command | what it measures | options | reads |"


def rows() -> list[str]:
    lines = [HEADER, "| --- | --- | --- | --- | --- |"]
    for name, analysis in registered().items():
        options = "; ".join(f"`{flag(option)}`: {option.help}" for option in analysis.options)
        lines.append(f"| {cell(analysis.title)} | `attention-explorer {name}` | {cell(analysis.help)} | "
                     f"{cell(options) or 'none'} | {cell(analysis.reads)} |")
    return lines


if __name__ == "__main__":
    rewrite_table(PAGE, rows())
