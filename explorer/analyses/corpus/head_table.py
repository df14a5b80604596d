"""One table of a model's heads: roles, the scores behind them and importance, indexed by head ("enc.0.3").

Built once from the analyses (shipped in the checkpoint folder or recomputed) and used by the Heads, Compare
and Prune pages and by `python -m explorer heads`, so every view reads the same numbers the same way.
"""

from __future__ import annotations

import pandas as pd

from explorer.analyses.corpus.results import HeadRoles, ImportanceReport, RolesReport
from explorer.analyses.corpus.roles import Thresholds, reclassified
from explorer.capture.head_sets import HeadSpec

# Importance columns: the measures head_importance.json holds per head.
IMPORTANCE_MEASURES = ("gradient_importance", "gradient_importance_normalised", "loss_change", "bleu_change",
                       "perplexity_change")
ROLE_COLUMNS = ("kind", "layer", "head", "roles", "confidence", "offset", "offset share", "rare rate", "rare chance",
                "rare or 2nd rarest", "syntactic")
# Short headers for the importance measures, so the one shown fits a narrow table beside the role maps.
MEASURE_HEADERS = {"gradient_importance": "importance", "gradient_importance_normalised": "importance / layer",
                   "loss_change": "Δ loss", "bleu_change": "Δ BLEU", "perplexity_change": "Δ perplexity"}


def _role_row(entry: HeadRoles) -> dict:
    positional, rare = entry.positional, entry.rare_token
    return {"kind": entry.kind, "layer": entry.layer, "head": entry.head, "roles": ", ".join(entry.roles),
            "confidence": entry.confidence, "offset": positional.offset if positional else None,
            "offset share": positional.share if positional else None, "rare rate": rare.rate if rare else None,
            "rare chance": rare.chance if rare else None, "rare or 2nd rarest": rare.rate_top2 if rare else None,
            "syntactic": ", ".join(entry.syntactic_relations)}


def head_table(roles: RolesReport | dict | None, importance: ImportanceReport | dict | None,
               thresholds: Thresholds | None = None) -> pd.DataFrame:
    """Per head, one row: role columns (from roles, re-classified at `thresholds` when given) and importance
    columns (from importance); either side may be missing. Index: the head's spec, in model order."""
    rows: dict[str, dict] = {}
    if roles:
        entries = reclassified(roles, thresholds) if thresholds else RolesReport.from_json(roles).heads
        rows = {entry.label(): _role_row(entry) for entry in entries}
    for entry in ImportanceReport.from_json(importance).heads if importance else []:
        row = rows.setdefault(entry.label(), {"kind": entry.kind, "layer": entry.layer, "head": entry.head})
        row.update({measure: entry.measure(measure) for measure in IMPORTANCE_MEASURES
                    if entry.measure(measure) is not None})
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "spec"
    for column in ("layer", "head", "offset"):        # whole numbers, with a gap where a head has none
        if column in table:
            table[column] = table[column].astype("Int64")
    return table


# The table's columns as `heads --json` names them (docs/cli-and-notebook.md, "JSON output"): snake_case.
JSON_KEYS = {"offset share": "offset_share", "rare rate": "rare_rate", "rare chance": "rare_chance",
             "rare or 2nd rarest": "rare_or_second_rarest"}
LISTS = ("roles", "syntactic")          # shown joined by commas; lists in JSON


def head_rows(table: pd.DataFrame) -> list[dict]:
    """The table as JSON rows, in model order: each head named by spec, kind, layer and head, snake_case keys,
    roles and syntactic relations as lists, a missing value as null."""
    rows = []
    for spec, row in table.iterrows():
        entry = {"spec": spec}
        for column, value in row.items():
            if column in LISTS:
                value = [part for part in value.split(", ") if part] if isinstance(value, str) else []
            elif pd.isna(value):
                value = None
            elif hasattr(value, "item"):            # numpy and pandas scalars as plain numbers
                value = value.item()
            entry[JSON_KEYS.get(column, column)] = value
        rows.append(entry)
    return rows


# The shown table's columns a few at a time, each group whole in a projector's 564 px column (all ten at once
# were cut at the table's edge, "ra…"): IMPORTANCE stands for the chosen measure's column.
IMPORTANCE = "importance"
COLUMN_GROUPS = {"importance and roles": (IMPORTANCE, "roles", "confidence"),
                 "positional": ("roles", "offset", "offset share"),
                 "rare-token": ("rare rate", "rare chance", "rare or 2nd rarest"),
                 "syntactic": ("roles", "syntactic")}


def shown_columns(table: pd.DataFrame, measure: str | None = None, group: str | None = None) -> pd.DataFrame:
    """The table as a page shows it, what is read first first: the chosen importance measure (headed by its
    short name, MEASURE_HEADERS) and the roles, then the scores behind the roles; only the columns of `group`
    (COLUMN_GROUPS) when given. The spec (the index) says kind, layer and head already; the other importance
    measures stay in the CSV."""
    columns = {}
    wanted = COLUMN_GROUPS[group] if group else (IMPORTANCE, *ROLE_COLUMNS[3:])
    if IMPORTANCE in wanted and measure and measure in table and not table[measure].isna().all():
        columns[MEASURE_HEADERS.get(measure, measure)] = table[measure]
    for column in ROLE_COLUMNS[3:]:
        if column in table and column in wanted:
            columns[column] = table[column]
    return pd.DataFrame(columns, index=table.index)


def spec_of(table: pd.DataFrame, label: str) -> HeadSpec:
    row = table.loc[label]
    return HeadSpec(row["kind"], int(row["layer"]), int(row["head"]))


def heads_without_role(table: pd.DataFrame) -> list[HeadSpec]:
    """The heads to prune to 'keep only the heads with a role' (the table's thresholds)."""
    return [spec_of(table, label) for label in table.index[table["roles"] == ""]]


def most_important(table: pd.DataFrame) -> str | None:
    """The head whose masking alone hurts most by the task's own score: the largest BLEU drop (translation), else
    the largest rise in perplexity (language models), else in loss; as "enc.0.3 (-1.20 BLEU)". None without
    ablations."""
    for column, worst, unit in (("bleu_change", "idxmin", " BLEU"), ("perplexity_change", "idxmax", " perplexity"),
                                ("loss_change", "idxmax", " loss")):
        if column in table and not table[column].isna().all():
            label = getattr(table[column], worst)()
            return f"{label} ({table.loc[label, column]:+.2f}{unit})"
    return None
