"""The notebook's and the command line's small defects of issue 47, each held: an empty sentence in a batch is
named by its number, a mistyped option shows its command's usage, a long paste is quoted short and its cut is said,
a masked language model without a mask says so, an image model given text says what it reads, a bundled model
opens by its bare name, and the docstrings name the keys the results use."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import explorer
from explorer.analyses.sentence.detectors import DETECTORS
from explorer.capture.inputs import InputError
from tests.explorer.test_cli import cli
from tests.hugging_face_models import saved_model

LONG = ("a dog runs in the park " * 270)[:6000]


def test_an_empty_sentence_of_a_batch_is_named_by_its_number(h8):
    result = cli("translate", "--model", str(h8.path), "A dog.", "")
    assert result.returncode == 1 and result.stderr.startswith("error: sentence 2 of 2: ")


def test_a_mistyped_option_after_a_command_shows_that_commands_usage(h8):
    result = cli("translate", "--model", str(h8.path), "--bogus", "A dog.")
    assert result.returncode == 2
    assert "usage: python -m explorer translate" in result.stderr
    assert "python -m explorer translate: error: unrecognized arguments: --bogus" in result.stderr


@pytest.mark.slow
def test_a_long_paste_is_quoted_short_and_its_cut_is_said(h8, tmp_path):
    result = cli("translate", "--model", str(h8.path), "--recase", LONG)     # the recasing note quotes the text
    assert result.returncode == 0 and "cut to fit" in result.stderr
    assert max(len(line) for line in result.stderr.splitlines()) < 300              # not 6,000 characters
    assert "(6,000 characters)" in result.stderr
    traced = cli("trace", "--model", str(h8.path), "--text", LONG, "--out", str(tmp_path / "t.npz"))
    assert traced.returncode == 0 and "longer than the model's maximum of 256 tokens" in traced.stderr
    assert "256 source" in traced.stdout


def test_a_masked_language_model_without_a_mask_says_so(tmp_path_factory, tmp_path):
    folder = saved_model("bert", tmp_path_factory)
    result = cli("trace", "--model", str(folder), "--text", "a dog plays in the snow", "--out",
                 str(tmp_path / "t.npz"))
    assert result.returncode == 0
    assert result.stdout.rstrip().endswith("predictions for [mask]: none: the text has no [MASK] to fill in; "
                                           "put one where a word goes")


def test_an_image_model_given_text_says_what_it_reads():
    vit = explorer.load("digits-vit")
    with pytest.raises(InputError, match="reads images, not text: give it an image .*trace_image"):
        explorer.trace_sentence(vit, "a dog")
    with pytest.raises(InputError, match="reads images"):
        explorer.translate(vit, ["a dog"])


@pytest.mark.slow
def test_a_bundled_model_opens_by_its_bare_name(h8, tmp_path, monkeypatch):
    model = explorer.load("en-de-h8")
    assert model.path.resolve() == h8.path.resolve()
    assert explorer.translate(model, ["A dog."]) == explorer.translate(h8, ["A dog."])
    assert cli("translate", "--model", "en-de-h8", "A dog.").returncode == 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "en-de-h8").mkdir()                 # a folder of that name where the person is: theirs wins
    with pytest.raises(Exception, match=str(tmp_path / "en-de-h8") + "|en-de-h8"):
        explorer.load("en-de-h8")


def test_the_docstrings_name_the_keys_the_results_use(h8):
    documented = inspect.getdoc(explorer.detect_heads)
    assert all(f'"{name}"' in documented for name in DETECTORS)
    result = explorer.faithfulness_of(h8, "A dog runs in the park.")
    scores = result.scores()
    assert "as a column" in inspect.getdoc(explorer.faithfulness_of)
    lengths = {len(np.asarray(values)) for values in scores.values()}
    assert len(lengths) == 1 and {"leave_one_out", "gradient_x_input"} <= set(scores)   # one value a token each


def test_help_loads_no_model_code():
    """`python -m explorer --help` took ~3 s importing torch; each command's code is now imported when it runs."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    probe = ("import sys; from explorer.cli import build_parser; build_parser().format_help(); "
             "print(sorted(m for m in ('torch', 'transformers', 'scipy', 'pandas') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
    shown = subprocess.run([sys.executable, "-m", "explorer", "roles", "--help"], cwd=ROOT, capture_output=True,
                           text=True, check=True)
    assert "--positional" in shown.stdout and "0.9" in shown.stdout          # the defaults still shown
