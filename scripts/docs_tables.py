"""Rewrite a generated table in a docs page: the table whose header line is `header`, down to its last row, is
replaced by `rows` (its header and separator first). The scripts that write tables from the project's own data
(papers_table.py, analyses_table.py) share it."""

from __future__ import annotations

from pathlib import Path


def cell(text: str) -> str:
    """Text safe inside a Markdown table's cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def rewrite_table(page: Path, rows: list[str]) -> None:
    """Replace the table that starts with rows[0] (its header) in `page`, and say how many rows it had."""
    lines = page.read_text(encoding="utf-8").split("\n")
    start = lines.index(rows[0])
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    page.write_text("\n".join(lines[:start] + rows + lines[end:]), encoding="utf-8")
    print(f"{page.name}: {end - start - 2} rows rewritten")
