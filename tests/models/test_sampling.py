"""Sampling (models/sampling.py and the interface's sample()): each filter against a computation of its own here,
temperature → 0 and top-k = 1 are greedy decoding (ours and tiny Hugging Face models), a seed reproduces a sample
and two seeds differ, the global random state is never touched, and no special token but the end token is ever
drawn."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.models.generation import sample
from explorer.models.loader import open_model
from explorer.models.sampling import Sampling, SamplingError, sample_sequence, sampling_probabilities
from tests.hugging_face_models import SENTENCE, TEXT, saved_model

LOGITS = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, 3.0, 0.25, -2.0])


def softmax(values: np.ndarray) -> np.ndarray:
    shifted = np.exp(values - values.max())
    return shifted / shifted.sum()


def test_temperature_divides_the_logits():
    for temperature in (0.5, 1.0, 2.0):
        expected = softmax(LOGITS.numpy().astype(np.float64) / temperature)
        got = sampling_probabilities(LOGITS, Sampling(temperature)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_top_k_keeps_the_k_most_probable_renormalised():
    for k in (1, 3, 8):
        order = np.argsort(-LOGITS.numpy())[:k]
        expected = np.zeros(len(LOGITS))
        expected[order] = softmax(LOGITS.numpy()[order].astype(np.float64))
        np.testing.assert_allclose(sampling_probabilities(LOGITS, Sampling(1.0, top_k=k)).numpy(), expected,
                                   rtol=1e-5, atol=1e-7)


def test_top_p_keeps_the_smallest_set_holding_p():
    probabilities = softmax(LOGITS.numpy().astype(np.float64))
    order = np.argsort(-probabilities)
    for p in (0.05, 0.5, 0.7, 0.9, 0.99, 1.0):
        # the fewest most-probable tokens whose mass reaches p, counted one at a time
        mass, kept = 0.0, []
        for token in order:
            if mass >= p:
                break
            kept.append(token)
            mass += probabilities[token]
        expected = np.zeros(len(LOGITS))
        expected[kept] = probabilities[kept] / probabilities[kept].sum()
        got = sampling_probabilities(LOGITS, Sampling(1.0, top_p=p)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
        assert probabilities[kept].sum() >= p - 1e-9 and probabilities[kept[:-1]].sum() < p


def test_banned_tokens_get_nothing_and_greedy_is_the_allowed_argmax():
    banned = [5, 0]                     # the two most probable
    drawn = sampling_probabilities(LOGITS, Sampling(1.0), banned)
    assert drawn[banned].sum() == 0 and torch.isclose(drawn.sum(), torch.tensor(1.0))
    greedy = sampling_probabilities(LOGITS, Sampling(0.0), banned)
    assert greedy.tolist() == [0.0, 1.0, 0, 0, 0, 0, 0, 0]


def test_settings_out_of_range_are_refused():
    for bad in (dict(temperature=-0.1), dict(temperature=float("nan")), dict(top_k=-1), dict(top_p=0.0),
                dict(top_p=1.5), dict(seed=-3), dict(top_k=2.5)):
        with pytest.raises(SamplingError):
            Sampling(**bad)


def test_a_seed_reproduces_and_two_seeds_differ_on_a_flat_distribution():
    flat = torch.zeros(50)
    def draw(seed: int) -> list[int]:
        return sample_sequence(lambda history: flat, Sampling(1.0, seed=seed), end=None, max_steps=20)
    assert draw(7) == draw(7)
    assert draw(7) != draw(8)
    assert len(set(draw(7))) > 5                                   # drawn, not one token again and again


@pytest.mark.slow
def test_the_global_random_state_is_left_alone(h8):
    before = torch.random.get_rng_state()
    sample(h8, h8.encode(SENTENCE).ids, temperature=1.0, seed=3)
    assert torch.equal(torch.random.get_rng_state(), before)
    torch.manual_seed(123)
    first = sample(h8, h8.encode(SENTENCE).ids, temperature=1.5, seed=3)
    torch.manual_seed(456)                                          # another session's draws change nothing
    assert sample(h8, h8.encode(SENTENCE).ids, temperature=1.5, seed=3) == first


@pytest.mark.slow
def test_temperature_towards_zero_and_top_k_one_are_greedy_on_ours(h8, tiny_checkpoint):
    for model in (h8, tiny_checkpoint):
        for text in ("Two dogs play in the snow.", "A man in an orange hat starring at something."):
            ids = model.encode(text).ids
            greedy = model.generate([ids])[0]
            assert sample(model, ids, temperature=0) == greedy
            assert sample(model, ids, temperature=1e-4, seed=5) == greedy
            assert sample(model, ids, temperature=1.0, top_k=1, seed=9) == greedy


@pytest.mark.slow
def test_seeds_on_the_bundled_model(h8):
    ids = h8.encode("Two dogs play in the snow.").ids
    hot = [sample(h8, ids, temperature=3.0, seed=seed) for seed in (0, 0, 1)]
    assert hot[0] == hot[1] and hot[0] != hot[2]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return open_model(saved_model("gpt2", tmp_path_factory))


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return open_model(saved_model("t5", tmp_path_factory))


def banned_of(model) -> set[int]:
    return set(model.special_ids | {model.pad_id}) - {model.end_id}


def argmax_loop(model, source_ids: list[int]) -> list[int]:
    """Greedy decoding written out: forward over the whole history, the most probable token that is not a special
    token other than the end token, until the end token or the step limit."""
    source = model.pad([source_ids]) if model.has("encoder") else None
    output: list[int] = []
    with torch.no_grad():
        for _ in range(model.step_limit(len(source_ids))):
            logits = model.forward(source, model.pad([model.decoder_input(source_ids, output)[0]]))[0, -1].clone()
            logits[sorted(banned_of(model))] = float("-inf")
            token = int(logits.argmax())
            if token == model.end_id:
                break
            output.append(token)
    return output


@pytest.mark.slow
def test_temperature_towards_zero_is_greedy_on_hugging_face_models(gpt2, t5):
    for text in (SENTENCE, TEXT[1]):
        ids = gpt2.encode(text).ids
        assert sample(gpt2, ids, temperature=0) == gpt2.generate([ids])[0] == argmax_loop(gpt2, ids)
        assert sample(gpt2, ids, temperature=1e-4, seed=2) == gpt2.generate([ids])[0]
        assert sample(gpt2, ids, top_k=1, seed=4) == gpt2.generate([ids])[0]
        # T5's own greedy decoding would write its special tokens; sampling never does, like beam search
        ids = t5.encode(text).ids
        assert sample(t5, ids, temperature=0) == sample(t5, ids, temperature=1e-4, seed=1) == argmax_loop(t5, ids)


@pytest.mark.slow
def test_no_special_token_but_the_end_token_is_ever_sampled(t5, tiny_checkpoint):
    for model in (t5, tiny_checkpoint):
        banned = banned_of(model)
        assert banned                                   # something to avoid: padding, start, unknown …
        ids = model.encode(SENTENCE).ids
        # near-uniform: unfiltered, T5's 2 of ~40 ids would come up ~5% of draws, ours 2 of 400 ~0.5% (~4 times)
        drawn = [token for seed in range(40) for token in sample(model, ids, temperature=50.0, seed=seed)]
        assert len(drawn) > 500 and not banned & set(drawn)
