"""The Olsson et al. 2022 card (explorer/papers/cards/induction_papers.py): its numbers equal the `detect` command's
JSON, a planted induction head in a tiny GPT-2 makes it hold, its verdict follows the stated rule, a 1-layer model is
not measurable, and a bundled translator points to the live demonstration."""

import json

import numpy as np
import pytest
import torch
import transformers

from explorer.cli import main
from explorer.models.hooks import model_run
from explorer.models.loader import open_model
from explorer.models.vocabulary import attention_hook
from explorer.papers.bench import DOES_NOT, HOLDS, NOT_MEASURABLE, PARTLY, Budget
from explorer.papers.cards import PAPERS
from tests.hugging_face_models import gpt2, saved_model

PLANTED = 50.0          # a score this far above the others takes all of softmax's weight


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    return open_model(str(saved_model("gpt2", tmp_path_factory)))


def detect_json(model, capsys) -> dict:
    assert main(["detect", "--model", str(model.path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def rule(score: float, chance: float) -> str:
    if score >= 0.3 and score >= 10 * chance:
        return HOLDS
    return PARTLY if score >= 3 * chance else DOES_NOT


def assert_numbers_are_the_commands(card, printed: dict) -> None:
    for kind, values in card.numbers["kinds"].items():
        for detector in ("prefix_matching", "induction"):
            scores = np.array(printed["scores"][kind][detector])
            # the printed scores have 3 decimals: on a random model several heads may share the top one
            tied = {f"{kind[:3]}.{layer}.{head}" for layer, head in np.argwhere(scores == scores.max())}
            best = values[detector]
            assert best["score"] == scores.max() and best["head"] in tied
            assert best["chance"] == printed["chance"][kind][detector]
            assert best["best_possible"] == printed["ceiling"][kind][detector]
            assert f"{best['score']:.3f}" in card.ours and f"{best['chance']:.3f}" in card.ours


def test_a_random_tiny_gpt2_follows_the_rule_with_the_commands_numbers(tiny_gpt2, capsys):
    card = PAPERS["olsson"](tiny_gpt2, Budget(sentences=20))
    printed = detect_json(tiny_gpt2, capsys)
    assert set(card.numbers["kinds"]) == {"decoder"} and card.numbers["kinds"]["decoder"]["layers"] == 2
    assert_numbers_are_the_commands(card, printed)
    best = card.numbers["kinds"]["decoder"]["prefix_matching"]
    assert card.verdict == rule(best["score"], best["chance"])
    assert card.command.startswith("python -m explorer detect --model ") and card.command.endswith("--json")
    assert "Olsson" in card.paper and "Argument 1" in card.source and "0.3" in card.rule
    assert "live demonstration" not in card.ours           # a language model: its own heads are the answer


def test_a_planted_induction_head_makes_the_claim_hold(tiny_gpt2, capsys):
    def induction(scores: torch.Tensor, _: str) -> torch.Tensor:
        n = scores.shape[-1]
        if n < 4:                       # the one-token pass that measures the vocabulary
            return scores
        length, planted = n // 2, scores.clone()     # GPT-2 reads the repeated tokens from position 0
        planted[:, 1, length:] = 0
        planted[:, 1, torch.arange(length, n), torch.arange(1, length + 1)] = PLANTED
        return planted

    hooks = {attention_hook("decoder", 1, "scores"): induction}
    with model_run(hooks, hook_names=tiny_gpt2.hook_names):
        card = PAPERS["olsson"](tiny_gpt2, Budget(sentences=20))
        printed = detect_json(tiny_gpt2, capsys)
    best = card.numbers["kinds"]["decoder"]["prefix_matching"]
    assert best["head"] == "dec.1.1" and best["score"] == pytest.approx(1.0, abs=1e-4)
    assert card.verdict == HOLDS
    assert_numbers_are_the_commands(card, printed)


def test_a_one_layer_model_is_not_measurable(tmp_path):
    model, tokenizer = gpt2(tmp_path)
    config = model.config
    config.n_layer = 1
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    one_layer = open_model(str(tmp_path))
    assert one_layer.layers("decoder") == 1
    card = PAPERS["olsson"](one_layer, Budget(sentences=20))
    assert card.verdict == NOT_MEASURABLE and card.ours == "" and card.numbers == {}
    assert "two layers" in card.rule and "decoder 1 layer" in card.rule


@pytest.mark.slow
def test_a_bundled_translator_points_to_the_live_demonstration(h8, capsys):
    progress = []
    card = PAPERS["olsson"](h8, Budget(sentences=20, progress=progress.append))
    # causal self-attention only: the claim is a language model's (the encoder reads both ways)
    assert set(card.numbers["kinds"]) == {"decoder"} and progress[-1] == 1.0
    assert_numbers_are_the_commands(card, detect_json(h8, capsys))
    verdicts = [rule(v["prefix_matching"]["score"], v["prefix_matching"]["chance"])
                for v in card.numbers["kinds"].values()]
    assert card.verdict == next(v for v in (HOLDS, PARTLY, DOES_NOT) if v in verdicts)
    assert "live demonstration" in card.ours
    assert card.command == "python -m explorer detect --model en-de-h8 --json"
