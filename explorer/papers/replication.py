"""Run the replication bench (explorer/papers/bench.py) on one model: every paper's card, as one JSON-ready object, the
same as `python -m explorer replicate --json` prints and the bundled models ship as replication.json."""

from __future__ import annotations

from explorer.capture.inputs import InputError
from explorer.models.interface import ExplorerModel
from explorer.papers.bench import Budget
from explorer.papers.cards import PAPERS


def replicate(model: ExplorerModel, names: list[str] | None = None, budget: Budget | None = None) -> dict:
    """Every paper's card on this model (or only those named), in the bench's order."""
    budget = budget or Budget()
    chosen = names or list(PAPERS)
    unknown = [name for name in chosen if name not in PAPERS]
    if unknown:
        raise InputError(f"--paper {', '.join(unknown)}: no such paper; the bench has {', '.join(PAPERS)}")
    cards = []
    for number, name in enumerate(chosen):
        cards.append(dict(PAPERS[name](model, budget).to_json(), name=name))
        if budget.progress:
            budget.progress((number + 1) / len(chosen))
    return {"model": model.name, "sentences": budget.sentences, "papers": cards}
