"""Rewrite the table of docs/papers.md from the shipped benches (models/en-de-h8, -h2, -h1 replication.json): a row
per paper with its claim, the paper's number and source, ours on h8, the three verdicts and the command. Run after
the benches are regenerated, so the page and the files cannot disagree.

    .venv/bin/python -m scripts.papers_table
"""

from __future__ import annotations

import json
from pathlib import Path

from scripts.docs_tables import cell, rewrite_table

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "papers.md"
HEADER = "| paper | claim | the paper's number | ours on h8 | verdict h8 / h2 / h1 | command |"


def rows() -> list[str]:
    benches = [json.loads((ROOT / "models" / f"en-de-h{n}" / "replication.json").read_text()) for n in (8, 2, 1)]
    lines = [HEADER, "| --- | --- | --- | --- | --- | --- |"]
    for h8, h2, h1 in zip(*(bench["papers"] for bench in benches)):
        ours = h8["ours"] or h8["rule"]
        lines.append(f"| {cell(h8['paper'])} | {cell(h8['claim'])} | {cell(h8['paper_value'])} ({cell(h8['source'])}) "
                     f"| {cell(ours)} | {h8['verdict']} / {h2['verdict']} / {h1['verdict']} | "
                     + (f"`{h8['command']}`" if h8["command"] else "") + " |")
    return lines


if __name__ == "__main__":
    rewrite_table(PAGE, rows())
