"""`python -m explorer focus` (explorer/cli/focus.py, explorer/analyses/sentence/focus_table.py): every head's top word for
the lecture's “it”, checked against the trace's piece-level patterns pooled into words here by hand, on the bundled
model and on tiny random GPT-2 (decoder-only) and BERT (encoder-only) models."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from explorer.capture.trace import trace_sentence
from explorer.capture.words import words_of
from explorer.models.loader import open_model
from tests.conftest import BUNDLED
from tests.explorer.test_cli import cli
from tests.hugging_face_models import saved_model

LECTURE = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module", params=["en-de-h8", "gpt2", "bert"])
def folder(request, tmp_path_factory) -> str:
    return str(BUNDLED[8] if request.param == "en-de-h8" else saved_model(request.param, tmp_path_factory))


def recomputed(model, sentence: str, word: str) -> dict:
    """The answer from the trace's piece patterns: the reading stack's self-attention, the query word's pieces' rows
    averaged, each key word's pieces summed (Clark et al. 2019), then the argmax over every word."""
    trace = trace_sentence(model, sentence)
    kind = "encoder" if model.has("encoder") else "decoder"
    ids = trace.source_ids if kind == "encoder" else trace.target_ids
    words = words_of(model, ids)
    labels = [text.lstrip("▁Ġ") or text for text in words.labels]
    typed = len(words) if kind == "encoder" else words.word_of(trace.first_step_position) + 1   # a prompt's words
    position = next(index for index in range(typed) if labels[index].lower() == word)
    pattern = trace.pattern(kind).astype(np.float64)
    query = words.spans[position]
    row = pattern[:, :, query.start:query.stop, :].mean(2)                       # [layers, heads, key pieces]
    by_word = np.stack([row[..., span.start:span.stop].sum(-1) for span in words.spans], -1)
    short = "enc" if kind == "encoder" else "dec"
    heads = [{"spec": f"{short}.{layer}.{head}", "kind": kind, "layer": layer, "head": head,
              "top_word": labels[by_word[layer, head].argmax()], "top_position": int(by_word[layer, head].argmax()),
              "weight": float(by_word[layer, head].max())}
             for layer in range(by_word.shape[0]) for head in range(by_word.shape[1])]
    return {"sentence": trace.text, "word": labels[position], "position": position, "kind": kind, "heads": heads,
            "rows": by_word, "labels": labels}


def same_head(got: dict, wanted: dict, rows: np.ndarray, labels: list[str]) -> bool:
    """The command's row is the recomputed one; a random model's near-uniform heads may tie two words to float32's
    precision (the command pools in float32), and then either is the top word."""
    if got == {**wanted, "weight": pytest.approx(wanted["weight"], abs=1e-5)}:
        return True
    row = rows[got["layer"], got["head"]]
    return (got["top_word"] == labels[got["top_position"]] and abs(row[got["top_position"]] - wanted["weight"]) < 1e-5
            and abs(got["weight"] - wanted["weight"]) < 1e-5)


@pytest.mark.slow
def test_json_answer_is_the_traces_patterns_pooled_into_words(folder):
    result = cli("focus", "--model", folder, "--text", LECTURE, "--word", "it", "--json")
    assert result.returncode == 0, result.stderr
    answer, expected = json.loads(result.stdout), recomputed(open_model(folder), LECTURE, "it")
    assert answer["model"] and answer["occurrence"] == 1
    for key in ("sentence", "word", "position", "kind"):
        assert answer[key] == expected[key], key
    assert len(answer["heads"]) == len(expected["heads"])
    for got, wanted in zip(answer["heads"], expected["heads"]):
        assert same_head(got, wanted, expected["rows"], expected["labels"]), (got, wanted)
    assert answer["top_word_counts"] == dict(Counter(row["top_word"] for row in answer["heads"]))


def test_json_keys_are_snake_case(folder):
    answer = json.loads(cli("focus", "--model", folder, "--text", LECTURE, "--word", "it", "--json").stdout)
    keys = list(answer) + [key for row in answer["heads"] for key in row]     # top_word_counts' keys are words
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", key) for key in keys), keys
    assert isinstance(answer["heads"], list) and isinstance(answer["top_word_counts"], dict)


@pytest.mark.slow
def test_text_prints_one_line_per_head_then_the_counts(folder):
    """The text is the JSON answer (checked above) as lines: head, top word, weight in percent."""
    result = cli("focus", "--model", folder, "--text", LECTURE, "--word", "it")
    assert result.returncode == 0, result.stderr
    expected = json.loads(cli("focus", "--model", folder, "--text", LECTURE, "--word", "it", "--json").stdout)["heads"]
    *lines, summary = result.stdout.splitlines()
    assert len(lines) == len(expected)
    for line, row in zip(lines, expected):
        head, word, percent = line.split()
        assert (head, word) == (row["spec"], row["top_word"])
        assert percent == f"{100 * row['weight']:.1f}%"
    assert summary.count(f"of {len(expected)} heads") == len({row["top_word"] for row in expected})


def test_a_missing_word_is_one_error_line_naming_it(folder):
    result = cli("focus", "--model", folder, "--text", LECTURE, "--word", "zebra")
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "'zebra'" in lines[0]
    assert "animal" in lines[0].replace("Ġ", "")         # the sentence's words, to pick from


@pytest.mark.slow
def test_a_repeated_word_says_which_occurrence_it_reads():
    model = str(BUNDLED[8])
    first = cli("focus", "--model", model, "--text", LECTURE, "--word", "the", "--json")
    second = cli("focus", "--model", model, "--text", LECTURE, "--word", "the", "--occurrence", "2", "--json")
    assert "occurs 2 times" in first.stderr
    assert (json.loads(first.stdout)["position"], json.loads(second.stdout)["position"]) == (0, 4)
    third = cli("focus", "--model", model, "--text", LECTURE, "--word", "the", "--occurrence", "3")
    assert third.returncode == 1 and third.stderr.startswith("error: --occurrence 3")
