"""The Papers page: a bundled model's shipped bench shown at once (a row per paper, the verdict marked, the
numbers those of replication.json); a model without one offers the run, and the run's cards are the library's."""

from __future__ import annotations

import json

import pytest

from explorer.pages.components.session import OWN
from explorer.papers.cards import PAPERS
from tests.app.conftest import open_page
from tests.conftest import ROOT

SENTENCE = "Two dogs play in the snow."
# Each card is drawn only while open (pages/papers.py): its expander's key holds whether it is, as a click sets it.
EVERY_CARD_OPEN = {f"papers_card_{name}": True for name in PAPERS}


def test_a_card_is_drawn_only_while_open():
    at = open_page("papers.py", SENTENCE)
    assert len(at.expander) == len(PAPERS) and not [b for b in at.markdown if b.value.startswith("**Ours.**")]
    at.session_state["papers_card_voita"] = True
    at.run()
    [ours] = [block.value for block in at.markdown if block.value.startswith("**Ours.**")]
    [opened] = [e for e in at.expander if [m for m in e.markdown if m.value.startswith("**Ours.**")]]
    assert opened.label.startswith("Voita") and ours


def test_a_bundled_models_shipped_bench_is_shown_at_once():
    shipped = ROOT / "models" / "en-de-h8" / "replication.json"
    assert shipped.is_file(), f"{shipped} is shipped with the bundled model"
    report = json.loads(shipped.read_text(encoding="utf-8"))
    at = open_page("papers.py", SENTENCE, **EVERY_CARD_OPEN)
    [table] = [frame.value for frame in at.table if "verdict" in frame.value.columns]
    assert table.index.tolist() == [card["paper"] for card in report["papers"]]
    assert [mark.lower() for mark in table["verdict"]] == [card["verdict"] for card in report["papers"]]
    ours = [block.value for block in at.markdown if block.value.startswith("**Ours.**")]
    assert ours == [f"**Ours.** {card['ours'] or '—'}" for card in report["papers"]]


@pytest.mark.slow
def test_a_model_without_a_bench_offers_the_run_and_shows_the_librarys_cards(tiny_checkpoint, monkeypatch):
    """The page runs the library's replicate with the chosen budget and shows its cards (the library's result is
    recorded as the page gets it: running the bench again here took as long as the page's run)."""
    from explorer.papers import replication

    library_replicate, runs = replication.replicate, []

    def recorded(model, budget):
        runs.append((budget.sentences, library_replicate(model, budget=budget)))
        return runs[-1][1]

    monkeypatch.setattr(replication, "replicate", recorded)
    at = open_page("papers.py", SENTENCE, model=OWN, own_model=str(tiny_checkpoint.path), **EVERY_CARD_OPEN)
    assert any("ships no replication.json" in info.value for info in at.info)
    assert runs == []                                   # nothing runs until asked
    at.number_input(key="papers_sentences").set_value(20)
    at.button(key="papers_run").click()
    at.run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    [(sentences, expected)] = runs
    assert sentences == 20 and [card["paper"] for card in expected["papers"]]
    ours = [block.value for block in at.markdown if block.value.startswith("**Ours.**")]
    assert ours == [f"**Ours.** {card['ours'] or '—'}" for card in expected["papers"]]



@pytest.mark.slow
def test_the_installed_encoders_bench_stands_beside_voita_and_clark(tmp_path, monkeypatch):
    """With all-MiniLM-L6-v2 installed and a bench of it in its analyses folder (here its Voita and Clark cards on 3
    sentences, written to a temporary folder), the open model's Voita and Clark cards show its verdict and numbers,
    and Clark's table a column of its best head per relation beside the paper's."""
    from explorer.models.installed import INSTALLED
    from explorer.models.loader import open_model
    from explorer.pages.components import paper_columns
    from explorer.papers.bench import Budget
    from explorer.papers.replication import replicate

    name = "all-MiniLM-L6-v2"
    assert INSTALLED[name].installed_folder() is not None, f"{name} is not installed: run bash scripts/setup.sh"
    bench = replicate(open_model(name), ["voita", "clark"], Budget(sentences=3))
    (tmp_path / name).mkdir()
    (tmp_path / name / "replication.json").write_text(json.dumps(bench), encoding="utf-8")
    monkeypatch.setattr(paper_columns, "analyses_folder", lambda installed: tmp_path / installed)
    theirs = {card["name"]: card for card in bench["papers"]}
    at = open_page("papers.py", SENTENCE, **EVERY_CARD_OPEN)
    lines = [block.value for block in at.markdown if block.value.startswith(f"**{name}")]
    assert lines == [f"**{name} (installed; its shipped bench): {theirs[paper]['verdict']}.** {theirs[paper]['ours']}"
                     for paper in ("voita", "clark")]
    [relations] = [frame.value for frame in at.table if name in frame.value.columns and "det → det" in frame.value.index]
    det = next(row for row in theirs["clark"]["numbers"]["relations"] if row["ud"] == "det")["ours"]
    assert relations.loc["det → det", name] == f"{det['head']} {det['accuracy']:.1%} vs {det['baseline']:.1%}"
    assert relations.loc["det → det", "paper (BERT-base)"] == "8-11 94.3% vs 51.7%"
    [layers] = [frame.value for frame in at.table if name in frame.value.columns and "layer 1" in frame.value.index]
    shares = theirs["clark"]["numbers"]["token_shares"]["by_layer"]
    assert layers.loc["layer 6", name] == " / ".join(f"{shares[c][5]:.2f}" for c in ("first", "end", "punctuation"))
