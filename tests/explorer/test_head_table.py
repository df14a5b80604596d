"""The one table of heads: every head once, the shipped numbers unchanged, used alike by pages and the CLI."""

import json

import pytest

from explorer.analyses.corpus.head_table import head_table, heads_without_role, most_important
from explorer.analyses.corpus.roles import Thresholds
from explorer.analyses.corpus.shipped_analyses import summary
from explorer.capture.head_sets import HeadSpec, all_heads
from tests.explorer.test_cli import cli


def shipped_files(checkpoint):
    return (json.loads((checkpoint.path / name).read_text()) for name in ("head_roles.json", "head_importance.json"))


def test_the_table_holds_every_head_with_the_shipped_numbers(h8):
    roles, importance = shipped_files(h8)
    table = head_table(roles, importance)
    assert list(table.index) == [str(h) for h in all_heads(h8.model.config)]
    for entry in roles["heads"]:
        row = table.loc[entry["spec"]]
        assert row["confidence"] == entry["confidence"] and row["roles"] == ", ".join(entry["roles"])
        if entry.get("positional"):
            assert row["offset"] == entry["positional"]["offset"] and row["offset share"] == entry["positional"]["share"]
    for entry in importance["heads"]:
        assert table.loc[entry["spec"], "bleu_change"] == entry["bleu_change"]
    worst = min(importance["heads"], key=lambda h: h["bleu_change"])
    assert most_important(table) == f"{worst['spec']} ({worst['bleu_change']:+.2f} BLEU)"
    assert summary(roles, importance)["most important (masked alone)"] == most_important(table)


def test_thresholds_reclassify_and_decide_which_heads_have_no_role(h8):
    roles, _ = shipped_files(h8)
    everything = head_table(roles, None, Thresholds(positional=0.0))       # every self-attention head is positional
    assert all("positional" in r for r in everything.loc[everything["kind"] != "cross", "roles"])
    assert HeadSpec("encoder", 0, 0) not in heads_without_role(everything)
    assert len(heads_without_role(head_table(roles, None, Thresholds(positional=1.01)))) >= 48


def test_importance_alone_gives_a_table_and_no_results_an_empty_one(h8):
    _, importance = shipped_files(h8)
    table = head_table(None, importance)
    assert len(table) == 72 and "roles" not in table and most_important(table)
    assert head_table(None, None).empty and most_important(head_table(None, None)) is None


@pytest.mark.slow
def test_the_cli_prints_the_same_table(h8):
    result = cli("heads", "--model", str(h8.path), "--json")
    assert result.returncode == 0
    printed = json.loads(result.stdout)
    table = head_table(*shipped_files(h8))
    assert printed["model"] == h8.name and [row["spec"] for row in printed["heads"]] == list(table.index)
    rows = {row["spec"]: row for row in printed["heads"]}
    assert rows["enc.1.6"]["offset_share"] == table.loc["enc.1.6", "offset share"]
    assert rows["enc.1.6"]["roles"] == [role for role in table.loc["enc.1.6", "roles"].split(", ") if role]
    assert (rows["enc.1.6"]["kind"], rows["enc.1.6"]["layer"], rows["enc.1.6"]["head"]) == ("encoder", 1, 6)
    text = cli("heads", "--model", str(h8.path))
    assert text.returncode == 0 and len(text.stdout.splitlines()) == 72 + 2      # header, index name, 72 heads


def test_the_cli_says_when_a_model_has_no_analyses(tiny_checkpoint):
    result = cli("heads", "--model", str(tiny_checkpoint.path))
    assert result.returncode == 1 and result.stderr.startswith("error:") and "head_roles.json" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
