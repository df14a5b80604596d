"""The Papers page's extra column: an installed pretrained encoder's shipped bench (models/installed.py; its
replication.json under models/<name>/) beside the open model's numbers, on the cards whose claims are about what
a pretrained model's heads do (Voita et al.'s roles, Clark et al.'s syntax and delimiters). The bundled caption
models are small; all-MiniLM-L6-v2 is a real BERT, the closer comparison to the papers' models."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from explorer.models.installed import INSTALLED, analyses_folder
from explorer.papers.bench import REPLICATION_FILE
from explorer.papers.cards.clark_measures import PAPER_FIGURE

BESIDE = ("voita", "clark")      # the cards that gain the column
PAPER = "paper (BERT-base)"


def installed_benches(open_folder: Path) -> dict[str, dict]:
    """Name → the shipped bench of each installed package model that has one; the open model itself left out
    (its numbers are already the card's)."""
    benches = {}
    for name, entry in INSTALLED.items():
        folder = analyses_folder(name)
        if entry.installed_folder() is None or folder.resolve() == Path(open_folder).resolve():
            continue
        report = _read_json(folder / REPLICATION_FILE)
        if report is not None:
            benches[name] = {card["name"]: card for card in report.get("papers", []) if "name" in card}
    return benches


def _read_json(path: Path) -> dict | None:
    """A shipped JSON file, None when absent or unreadable (the page then shows no column, never an error)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def _voita_parts(card: dict) -> dict[str, str]:
    """Voita's positional, syntactic and rare-token parts of one card, as short text."""
    numbers, parts = card.get("numbers") or {}, {}
    if "positional" in numbers:
        p = numbers["positional"]
        parts["most positional head"] = f"{p['head']}: {p['share']:.0%} at offset {p['offset']:+d}"
    if "syntactic" in numbers:
        s = numbers["syntactic"]
        parts["most syntactic head"] = (f"{s['head']} {s['relation']}: {s['accuracy']:.0%} vs baseline "
                                        f"{s['baseline']:.0%} ({s['margin'] * 100:+.1f} points)")
    if "rare_token_first_layer" in numbers:
        r = numbers["rare_token_first_layer"]
        parts["rare-token head in layer 1"] = f"{r['head']}: {r['rate']:.0%} vs chance {r['chance']:.0%}"
    return parts


def _clark_relations(card: dict) -> dict[str, str]:
    """Relation (paper → UD) → "head accuracy vs baseline" of one Clark card; {} for a bench from before the
    per-relation table."""
    rows = (card.get("numbers") or {}).get("relations")
    if not isinstance(rows, list):
        return {}
    return {f"{row['relation']} → {row['ud'] or '—'}": (
        f"{row['ours']['head']} {row['ours']['accuracy']:.1%} vs {row['ours']['baseline']:.1%}"
        if row.get("ours") else "—") for row in rows}


def _clark_paper(card: dict) -> dict[str, str]:
    rows = (card.get("numbers") or {}).get("relations")
    return {f"{row['relation']} → {row['ud'] or '—'}": f"{row['paper']['head']} {row['paper']['accuracy']:.1%} vs "
            f"{row['paper']['baseline']:.1%}" for row in rows} if isinstance(rows, list) else {}


def _clark_layers(card: dict) -> dict[str, str]:
    """Layer (from 1) → "first / end / periods-commas" shares of one Clark card."""
    shares = ((card.get("numbers") or {}).get("token_shares") or {}).get("by_layer")
    if not shares:
        return {}
    return {f"layer {i + 1}": " / ".join(f"{shares[c][i]:.2f}" for c in PAPER_FIGURE) for i in range(len(shares["end"]))}


def show_beside(card: dict, model_name: str, benches: dict[str, dict]) -> None:
    """Under an open card of BESIDE: each installed model's verdict and numbers, and a table with its column."""
    if card.get("name") not in BESIDE:
        return
    for name, bench in benches.items():
        theirs = bench.get(card["name"])
        if theirs is None:
            continue
        st.markdown(f"**{name} (installed; its shipped bench): {theirs['verdict']}.** {theirs['ours'] or '—'}")
        if card["name"] == "voita":
            columns = {model_name: _voita_parts(card), name: _voita_parts(theirs)}
        else:
            columns = {PAPER: _clark_paper(theirs) or _clark_paper(card), model_name: _clark_relations(card),
                       name: _clark_relations(theirs)}
        _table(columns)
        if card["name"] == "clark":
            st.caption("Share of attention on the first token ([CLS]) / the end token ([SEP], </s>) / periods and "
                       "commas, mean over heads, by layer (the paper's read off its Figure 2):")
            paper = {f"layer {i + 1}": " / ".join(f"{PAPER_FIGURE[c][i]:.2f}" for c in PAPER_FIGURE)
                     for i in range(len(PAPER_FIGURE["end"]))}
            _table({PAPER: paper, model_name: _clark_layers(card), name: _clark_layers(theirs)})


def _table(columns: dict[str, dict[str, str]]) -> None:
    columns = {title: values for title, values in columns.items() if values}
    rows = list(dict.fromkeys(row for values in columns.values() for row in values))
    if len(columns) > 1 and rows:
        st.table(pd.DataFrame({title: [values.get(row, "—") for row in rows] for title, values in columns.items()},
                              index=rows))
