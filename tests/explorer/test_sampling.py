"""Sampling in the explorer (explorer/capture/sampling.py) and the CLI's --temperature --top-k --top-p --seed: a step's
distribution reshaped by the settings equals the softmax computed here from the model's own logits; a sample is
the same from the notebook API, the library and the CLI; bad values are one line naming them."""

from __future__ import annotations

import html
import subprocess
import sys

import numpy as np
import pytest
import torch

import explorer
from explorer.capture.inputs import InputError
from explorer.capture.sampling import (
    sample,
    sample_log_probs,
    sample_text,
    settings_from,
    step_log_probs,
    step_sampling,
    step_sampling_table,
)
from explorer.capture.trace import trace_sentence
from explorer.cli import main as cli
from explorer.figures.sampling import sampling_figure
from explorer.models import generation
from explorer.models.sampling import Sampling
from tests.hugging_face_models import saved_model

SENTENCE = "Two dogs play in the snow."


@pytest.fixture(scope="module")
def traced(h8):
    return trace_sentence(h8, SENTENCE)


def own_logits(model, trace) -> torch.Tensor:
    """[steps, vocab]: forward's logits at each step of the trace's output."""
    with torch.no_grad():
        logits = model.forward(model.pad([trace.source_ids]), model.pad([trace.target_ids]))[0].float()
    return logits[: len(trace.steps)]


def test_step_log_probs_are_the_models_own(h8, traced):
    log_probs = step_log_probs(h8, traced)
    np.testing.assert_allclose(log_probs, torch.log_softmax(own_logits(h8, traced), -1), atol=1e-4)
    np.testing.assert_allclose(np.exp(log_probs[range(len(traced.steps)), [s.chosen_id for s in traced.steps]]),
                               [s.chosen_prob for s in traced.steps], rtol=1e-4)


@pytest.mark.parametrize("settings", [Sampling(1.0), Sampling(2.0), Sampling(0.5, top_k=5), Sampling(1.3, top_p=0.8),
                                      Sampling(0.0)])
def test_a_steps_distribution_under_the_settings_is_the_softmax_of_the_logits(h8, traced, settings):
    step = 2
    logits = own_logits(h8, traced)[step].double().numpy()
    banned = sorted(h8.special_ids - {h8.end_id})
    logits[banned] = -np.inf
    if settings.greedy:
        expected = np.zeros_like(logits)
        expected[np.argmax(logits)] = 1.0
    else:
        scaled = logits / settings.temperature
        if settings.top_k:
            scaled[scaled < np.sort(scaled)[-settings.top_k]] = -np.inf
        expected = np.exp(scaled - scaled.max())
        expected /= expected.sum()
        if settings.top_p < 1:
            order = np.argsort(-expected)
            keep = order[: int(np.searchsorted(np.cumsum(expected[order]), settings.top_p)) + 1]
            nucleus = np.zeros_like(expected)
            nucleus[keep] = expected[keep]
            expected = nucleus / nucleus.sum()
    view = step_sampling(step_log_probs(h8, traced)[step], settings, h8)
    np.testing.assert_allclose(view.sampled_probs, expected[view.ids], atol=1e-5)
    own = np.exp(logits - np.logaddexp.reduce(own_logits(h8, traced)[step].double().numpy()))
    np.testing.assert_allclose(view.model_probs, own[view.ids], rtol=1e-4)
    assert view.kept == int((expected > 0).sum())
    ranked = [int(i) for i in np.argsort(-own_logits(h8, traced)[step].numpy()) if i not in banned]
    assert view.ids == ranked[: len(view.ids)]
    table = step_sampling_table(view)
    assert list(table.columns) == ["token", "model (T = 1)", "sampled from"] and len(table) == 15


@pytest.mark.slow
@pytest.mark.parametrize("settings", [Sampling(1.0), Sampling(1.5, top_k=20, top_p=0.9, seed=7)])
def test_a_samples_steps_are_the_distributions_its_tokens_were_drawn_from(h8, settings):
    """Each step of a sample: the model's distribution given the tokens the sample drew before (computed here one
    prefix at a time, as the sampling loop does), its drawn token marked and drawable, no token that can never be
    drawn listed."""
    sentence = "A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side."
    drawn = sample(h8, sentence, settings)
    assert drawn.ended and drawn.step_ids == drawn.ids + [h8.end_id]
    log_probs = sample_log_probs(h8, drawn)
    source = h8.encode(sentence).ids
    never = (h8.special_ids | {h8.pad_id}) - {h8.end_id}
    for step, token in enumerate(drawn.step_ids):
        with torch.no_grad():
            logits = h8.forward(h8.pad([source]), h8.pad([[h8.start_id] + drawn.ids[:step]]))[0, -1].double()
        np.testing.assert_allclose(log_probs[step], torch.log_softmax(logits, -1).numpy(), atol=1e-4)
        view = step_sampling(log_probs[step], settings, h8, drawn_id=token)
        assert view.drawn_id == token and token in view.ids
        assert view.sampled_probs[view.ids.index(token)] > 0           # what the sample drew could be drawn
        assert not never & set(view.ids)
        order = [int(i) for i in np.argsort(-logits.numpy())]
        last_shown = [i for i in order if i not in never][:15][-1]
        assert view.never_drawn == h8.pieces([i for i in order[: order.index(last_shown)] if i in never])
        marked = [label for label in sampling_figure(view, step).data[0].y if label.startswith("▶ ")]
        assert len(marked) == 1 and html.unescape(marked[0]) == "▶ " + h8.pieces([token])[0]
    assert any(step_sampling(row, settings, h8).never_drawn == ["<s>"] for row in log_probs)   # <s> left out


def test_every_value_label_has_two_significant_digits_in_a_readable_font(h8, traced):
    view = step_sampling(step_log_probs(h8, traced)[0], Sampling(1.0), h8)
    bars = sampling_figure(view, 0).data[1]
    assert bars.textfont.size >= 11
    hot = sampling_figure(step_sampling(step_log_probs(h8, traced)[0], Sampling(2.0), h8), 0).data[1]
    cold = sampling_figure(step_sampling(step_log_probs(h8, traced)[0], Sampling(0.3), h8), 0).data[1]
    for text, p in zip(bars.text + hot.text + cold.text, bars.x + hot.x + cold.x):
        if p < 1e-5:
            assert text == ("0" if p == 0 else "< 0.00001")
            continue
        digits = text.lstrip("0.").replace(".", "")
        assert len(digits) == 2 and "e" not in text and float(text) == pytest.approx(p, rel=0.05), (text, p)


def test_an_empty_word_drawn_adds_no_second_space(h8):
    """The word-start mark ▁ alone, then a piece that starts a word: detokenized as is, two spaces."""
    ids = h8.tokenizer.encode_ids("Tieres win")
    lone = h8.tokenizer.sp.piece_to_id("▁")
    pieces = h8.pieces(ids)
    at = next(i for i, piece in enumerate(pieces) if i > 0 and piece.startswith("▁"))
    drawn = ids[:at] + [lone] + ids[at:]
    assert "  " in h8.detokenize(drawn)
    assert sample_text(h8, drawn, h8.pieces(drawn)) == h8.detokenize(ids) == "Tieres win"
    # a lone ▁ before punctuation is a space the sample did draw
    comma = [h8.tokenizer.sp.piece_to_id(",")]
    assert sample_text(h8, [lone] + comma, h8.pieces([lone] + comma)) == h8.detokenize([lone] + comma)


@pytest.mark.slow
def test_a_sample_is_the_same_from_the_library_the_notebook_and_the_cli(h8, capsys):
    settings = Sampling(1.2, top_k=40, top_p=0.95, seed=11)
    library = sample(h8, SENTENCE, settings)
    assert library.ids == generation.sample(h8, h8.encode(SENTENCE).ids, 1.2, 40, 0.95, 11)
    assert library.text == explorer.sample(h8, SENTENCE, temperature=1.2, top_k=40, top_p=0.95, seed=11)
    assert cli(["translate", "--model", str(h8.path), "--temperature", "1.2", "--top-k", "40", "--top-p", "0.95",
                "--seed", "11", SENTENCE]) == 0
    assert capsys.readouterr().out.strip() == library.text
    # a hot temperature: another seed, another sample (a link's seed is what makes it reproducible)
    assert len({explorer.sample(h8, SENTENCE, temperature=2.5, seed=seed) for seed in range(3)}) == 3


@pytest.mark.slow
def test_temperature_zero_or_absent_is_greedy_or_beam_as_before(h8, capsys):
    for extra in ([], ["--temperature", "0"]):
        for beam in ("1", "4"):
            assert cli(["translate", "--model", str(h8.path), "--beam", beam, *extra, SENTENCE]) == 0
            assert capsys.readouterr().out.strip() == explorer.translate(h8, [SENTENCE], beam_size=int(beam))[0]


@pytest.mark.parametrize("flags, named", [
    (["--temperature", "-1"], "--temperature -1"), (["--temperature", "warm"], "--temperature warm"),
    (["--temperature", "1", "--top-p", "1.5"], "--top-p 1.5"), (["--temperature", "1", "--top-p", "0"], "--top-p 0"),
    (["--temperature", "1", "--top-k", "-2"], "--top-k -2"), (["--temperature", "1", "--top-k", "2.5"], "--top-k 2.5"),
    (["--temperature", "1", "--seed", "-1"], "--seed -1"), (["--top-k", "5"], "--top-k"),
    (["--temperature", "0.7", "--beam", "3"], "--beam 3")])
def test_bad_sampling_flags_are_one_line_naming_them(h8, capsys, flags, named):
    assert cli(["translate", "--model", str(h8.path), *flags, SENTENCE]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and named in err and len(err.strip().splitlines()) == 1, err


def test_help_says_what_temperature_zero_does(capsys):
    with pytest.raises(SystemExit):
        cli(["generate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--temperature T" in text and "absent or 0: greedy decoding" in text and "--seed N" in text


def test_generate_samples_a_continuation(tmp_path_factory, capsys):
    folder = saved_model("gpt2", tmp_path_factory)
    model = explorer.load(str(folder))
    assert cli(["generate", "--model", str(folder), "--temperature", "0.9", "--seed", "4", "a dog runs"]) == 0
    assert capsys.readouterr().out.strip() == explorer.sample(model, "a dog runs", temperature=0.9, seed=4).strip()


def test_a_model_that_does_not_generate_says_so(tmp_path_factory):
    model = explorer.load(str(saved_model("bert", tmp_path_factory)))
    with pytest.raises(InputError, match="does not generate"):
        sample(model, SENTENCE, settings_from(1.0, 0, 1.0, 0))


@pytest.mark.slow
def test_the_warpers_library_loads_only_when_a_token_is_sampled():
    """transformers' warpers (models/sampling.py) are imported on the first sample: at the module's top they put
    transformers into every start of the app and the command line (decoding_steps imports the sampling loop)."""
    code = ("import sys, explorer.capture.decoding_steps, explorer.capture.sampling; "
            "assert 'transformers' not in sys.modules, 'transformers imported at start-up'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-500:]
