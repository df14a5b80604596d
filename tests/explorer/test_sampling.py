"""Sampling in the explorer (explorer/sampling.py) and the CLI's --temperature --top-k --top-p --seed: a step's
distribution reshaped by the settings equals the softmax computed here from the model's own logits; a sample is
the same from the notebook API, the library and the CLI; bad values are one line naming them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from explorer.cli import main as cli
from explorer.inputs import InputError
from explorer.sampling import sample, settings_from, step_log_probs, step_sampling, step_sampling_table
from explorer.trace import trace_sentence
from models.sampling import Sampling
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
    assert view.ids == list(np.argsort(-own_logits(h8, traced)[step].numpy())[: len(view.ids)])
    table = step_sampling_table(view)
    assert list(table.columns) == ["token", "model (T = 1)", "sampled from"] and len(table) == 15


def test_a_sample_is_the_same_from_the_library_the_notebook_and_the_cli(h8, capsys):
    settings = Sampling(1.2, top_k=40, top_p=0.95, seed=11)
    library = sample(h8, SENTENCE, settings)
    assert library.ids == h8.sample(h8.encode(SENTENCE).ids, 1.2, 40, 0.95, 11)
    assert library.text == explorer.sample(h8, SENTENCE, temperature=1.2, top_k=40, top_p=0.95, seed=11)
    assert cli(["translate", "--model", str(h8.path), "--temperature", "1.2", "--top-k", "40", "--top-p", "0.95",
                "--seed", "11", SENTENCE]) == 0
    assert capsys.readouterr().out.strip() == library.text
    # a hot temperature: another seed, another sample (a link's seed is what makes it reproducible)
    assert len({explorer.sample(h8, SENTENCE, temperature=2.5, seed=seed) for seed in range(3)}) == 3


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
