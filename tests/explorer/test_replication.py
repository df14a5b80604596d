"""The replication bench as one object: every paper in the bench's order, each card complete with a verdict by its
rule; `replicate --json` prints exactly what the library returns; the shipped replication.json files hold the same
schema and, for a card read from the model's own files, the same numbers a fresh run gives."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.cli import main
from explorer.models.data import read_lines
from explorer.models.vocabulary import attention_hook
from explorer.papers.bench import VERDICTS, Budget
from explorer.papers.replication import replicate
from tests.conftest import MULTI30K, SHIPPED

PAPERS_IN_ORDER = ["vaswani", "voita", "michel", "clark", "abnar_zuidema", "kobayashi", "xiao", "jain_wallace",
                   "olsson", "clark_layers"]
KEYS = {"paper", "claim", "paper_value", "ours", "verdict", "command"}


def check_report(report: dict, model_name: str) -> None:
    assert report["model"] == model_name
    assert [card["name"] for card in report["papers"]] == PAPERS_IN_ORDER
    for card in report["papers"]:
        assert set(card) >= KEYS, card["name"]
        assert card["verdict"] in VERDICTS and card["claim"] and card["paper_value"] and card["rule"], card["name"]
        if card["verdict"] == "not measurable":
            assert not card["ours"], card["name"]          # a reason instead of a number
        else:
            assert card["ours"] and card["command"].startswith("python -m explorer"), card["name"]


def first_token_shares(model, texts: list[str]) -> tuple[np.ndarray, float]:
    """Per decoder layer, the mean over sentences, heads and queries of the weight on the first key, and what
    uniform causal attention gives it (query i sees i + 1 keys): from the model's own forward over its greedy
    output, as Xiao et al. measure the attention sink."""
    shares, uniform = [], []
    for text in texts:
        source = model.encode(text).ids
        target, _ = model.decoder_input(source, model.generate([source])[0])
        _, cache = model.run_with_cache(model.pad([source]), model.pad([target]), attention_hook("decoder", "*", "pattern"))
        shares.append(cache.layers("decoder", "pattern")[0, ..., 0].double().numpy().mean(axis=(1, 2)))
        uniform.append(np.mean(1 / np.arange(1, len(target) + 1)))
    return np.mean(shares, axis=0), float(np.mean(uniform))


@pytest.mark.slow
def test_every_paper_gives_a_complete_card_on_our_tiny_model(tiny_checkpoint):
    report = replicate(tiny_checkpoint, budget=Budget(sentences=6))
    check_report(report, tiny_checkpoint.name)
    json.dumps(report)                                      # JSON-ready as it is
    # A card's numbers are the measurement it names: Xiao's first-token shares, computed here from the raw forward.
    xiao = next(card for card in report["papers"] if card["name"] == "xiao")["numbers"]
    shares, uniform = first_token_shares(tiny_checkpoint, read_lines(MULTI30K / "val.en.gz")[:6])
    assert xiao["sentences"] == 6
    np.testing.assert_allclose(xiao["first_token_share"], shares, atol=1e-4)      # the card rounds to 4 places
    assert xiao["uniform"] == pytest.approx(uniform, abs=1e-4)
    assert xiao["upper_factors"] == [round(xiao["first_token_share"][-1] / xiao["uniform"], 2)]


@pytest.mark.slow
def test_the_cli_prints_what_the_library_returns(tiny_checkpoint, capsys):
    budget = ["--sentences", "6"]
    for name in ("kobayashi", "xiao"):
        assert main(["replicate", "--model", str(tiny_checkpoint.path), "--paper", name, *budget, "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed == json.loads(json.dumps(replicate(tiny_checkpoint, [name], Budget(sentences=6))))


def test_an_unknown_paper_is_one_line(tiny_checkpoint, capsys):
    assert main(["replicate", "--model", str(tiny_checkpoint.path), "--paper", "vaswani2", "--json"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: --paper vaswani2: no such paper") and "jain_wallace" in error
    assert len(error.strip().splitlines()) == 1


@pytest.mark.parametrize("heads", sorted(SHIPPED))
def test_the_shipped_bench_has_every_paper_and_its_cheap_cards_match_a_fresh_run(heads):
    from explorer.models.loader import open_model

    path = SHIPPED[heads] / "replication.json"
    assert path.is_file(), f"{path} not shipped: python -m explorer replicate --model {SHIPPED[heads]} --json"
    shipped = json.loads(path.read_text(encoding="utf-8"))
    model = open_model(SHIPPED[heads])
    check_report(shipped, model.name)
    fresh = replicate(model, ["vaswani"], Budget(sentences=6))["papers"][0]   # read from the models' own files
    assert fresh["numbers"] == next(card for card in shipped["papers"] if card["name"] == "vaswani")["numbers"]
