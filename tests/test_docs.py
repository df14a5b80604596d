"""The README a newcomer reads in two minutes, and the documentation site that holds the depth: docs/ builds in
MkDocs' strict mode (no broken link, no missing page), every page of it is in its navigation and linked from the
README, and the built site fetches nothing from another host."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT

README = ROOT / "README.md"
CDN = re.compile(r"unpkg\.com|jsdelivr|googleapis|gstatic|cdnjs")


def build(root, site) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=root,
                          capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def nav_pages(entries) -> set[str]:
    found = set()
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            found |= nav_pages(value) if isinstance(value, list) else {value}
    return found


def test_the_readme_is_short_and_links_every_docs_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", "\n".join(lines)))
    pages = {path.name for path in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages and linked == pages, sorted(pages ^ linked)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    assert nav_pages(config["nav"]) == pages | {"index.md"}


def test_the_page_for_transformerlens_users_runs(capsys):
    """Its code blocks, in order, in one namespace: the five tasks as the page shows them."""
    page = (ROOT / "docs" / "for-transformerlens-users.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "for-transformerlens-users.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "torch.Size([2, 8, " in printed and "encoder.embed" in printed or "decoder.layers.0" in printed
    assert namespace["ablated"].output_log_prob() != namespace["plain"].output_log_prob()


@pytest.mark.slow
def test_the_docs_build_strict_and_offline(tmp_path):
    result = build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stderr[-2000:]
    built = sorted((tmp_path / "site").glob("*.html"))
    assert {page.stem for page in built} >= {path.stem for path in (ROOT / "docs").glob("*.md")}
    assert [page.name for page in built if CDN.search(page.read_text(encoding="utf-8"))] == []
    assert "Multi30k" in (tmp_path / "site" / "models.html").read_text(encoding="utf-8")     # the content moved there


@pytest.mark.slow
def test_a_broken_link_fails_the_build(tmp_path):
    """What the strict build above rests on: a link to a page that does not exist stops it."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("screenshots"))
    (tmp_path / "docs" / "screenshots").mkdir()
    for figure in (ROOT / "docs" / "screenshots").iterdir():        # the pages' images, by link, not copied
        (tmp_path / "docs" / "screenshots" / figure.name).symlink_to(figure)
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [the missing page](missing.md).\n")
    result = build(tmp_path, tmp_path / "site")
    assert result.returncode != 0 and "missing.md" in result.stderr


FENCE = re.compile(r"^\s*(```|~~~)")
ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")


def paragraphs(text: str) -> list[str]:
    """The page's paragraphs: blocks of text between blank lines, fenced code and tables (lines starting with '|')
    left out, each list item a paragraph of its own, a heading a line of its own."""
    found, current, fenced = [], [], False

    def close():
        if current:
            found.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        if FENCE.match(line):
            close()
            fenced = not fenced
        elif fenced:
            continue
        elif not line.strip() or line.lstrip().startswith("|") or line.startswith("#"):
            close()
        else:
            if ITEM.match(line):
                close()
            current.append(line.strip())
    close()
    return found


def test_no_paragraph_in_the_docs_is_over_150_words():
    pages = sorted((ROOT / "docs").glob("*.md")) + [README]
    long = [f"{page.relative_to(ROOT)}: {len(words)} words, '{' '.join(words[:8])} …'"
            for page in pages for words in (text.split() for text in paragraphs(page.read_text(encoding="utf-8")))
            if len(words) > 150]
    assert long == [], "\n".join(long)


def test_the_speed_page_is_at_most_1500_words():
    words = len((ROOT / "docs" / "speed.md").read_text(encoding="utf-8").split())
    assert words <= 1500, words


def test_the_benchmarks_page_is_what_the_benchmarks_wrote():
    """docs/benchmarks.md is generated from docs/measurements/*.json, which the benchmarks write
    (benchmarks/measured.py): the page, the files and the benchmarks that write them agree."""
    import json

    from scripts.benchmarks_page import FOLDER, PAGE, page

    assert PAGE.read_text(encoding="utf-8") == page(), "docs/benchmarks.md is stale: python -m scripts.benchmarks_page"
    for path in FOLDER.glob("*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        assert {"benchmark", "command", "measured", "commit", "cores", "figures"} <= set(document), path.name
        module = document["command"].split("-m benchmarks.")[1].split()[0]
        assert "Measured(" in (ROOT / "benchmarks" / f"{module}.py").read_text(encoding="utf-8"), module
        for figure in document["figures"]:
            assert figure["met"] == (figure["value"] <= figure["at_most"]), (path.name, figure)
