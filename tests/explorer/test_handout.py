"""The Lesson as a handout (issue 61): one HTML file of every step on the person's sentence or digit, written by
`python -m explorer lesson` and the Lesson page's button: every step's title, its numbers equal to the Lesson's own
(what the page states), text escaped, under 5 MB, nothing fetched (plotly.js inside, gzipped)."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest

from explorer.capture.trace import trace_sentence
from explorer.teaching.handout import handout_html
from explorer.teaching.lesson import Lesson
from explorer.teaching.lesson_steps import TITLES
from tests.conftest import ROOT

SENTENCE = "The animal didn't cross the street because it was too tired."


def stated_numbers(page: str) -> dict[str, dict[str, object]]:
    """Each step's numbers as the file states them: section id → {name: value}."""
    found = {}
    for slug, body in re.findall(r'<section id="step-([a-z]+)">(.*?)</section>', page, flags=re.S):
        found[slug] = {html.unescape(name): json.loads(html.unescape(value)) for name, value in
                       re.findall(r'data-name="([^"]*)" data-value=\'([^\']*)\'', body)}
    return found


@pytest.mark.slow            # a process of its own, as a teacher runs it: 6 s
def test_the_command_writes_every_step_with_the_lessons_numbers(h8, tmp_path):
    out = tmp_path / "lesson.html"
    result = subprocess.run([sys.executable, "-m", "explorer", "lesson", "--model", str(h8.path), "--text", SENTENCE,
                             "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    page = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 5_000_000
    lesson = Lesson(h8, trace_sentence(h8, SENTENCE))
    slugs = lesson.slugs
    assert len(slugs) == 17
    for number, slug in enumerate(slugs, start=1):
        assert f"Step {number} of 17: {html.escape(TITLES[slug])}" in page
    # the numbers the file states are the Lesson's, which the page states for the same focus (to float32 noise
    # between the command's threads and this process's one: the page shows 4 decimals)
    focus = lesson.clamped(lesson.default_focus())
    stated = stated_numbers(page)
    for slug in slugs:
        own = {number.name: number.value for number in lesson.step(slug, focus).numbers}
        assert stated[slug].keys() == own.keys(), slug
        for name, value in own.items():
            assert stated[slug][name] == (pytest.approx(value, rel=1e-5, abs=1e-6) if isinstance(value, (float, list))
                                          else value), (slug, name)
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://cdn" not in page


def test_a_hostile_sentence_is_text_in_the_handout(tiny_checkpoint):
    hostile = 'A dog <script>alert("x")</script> runs <img src=x onerror=alert(1)>.'
    page = handout_html(tiny_checkpoint, trace_sentence(tiny_checkpoint, hostile))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert page.count("<script") == 2                       # the packed plotly.js and the one that draws


def test_an_image_lesson_makes_a_handout_too(tmp_path, capsys):
    from explorer.cli import main as cli

    out = tmp_path / "digit.html"
    assert cli(["lesson", "--model", str(ROOT / "models" / "digits-vit"), "--image", "digits:17", "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "Step 1 of" in page and "Lesson: " in page and out.stat().st_size < 5_000_000


@pytest.mark.parametrize("arguments, says", [(["--out", "lesson.pdf"], "must end in .html"),
                                             (["--out", "no/such/folder/lesson.html"], "no such folder")])
def test_a_wrong_output_name_is_one_line(h8, tmp_path, capsys, arguments, says, monkeypatch):
    from explorer.cli import main as cli

    monkeypatch.chdir(tmp_path)
    assert cli(["lesson", "--model", str(h8.path), "--text", SENTENCE, *arguments]) != 0
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
