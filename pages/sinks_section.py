"""The Heads page's "Attention sinks on your sentence": heads that park most of their attention on the first token,
special tokens or punctuation (explorer/sinks.py), with the share by norm beside it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.sinks import OVER_CHANCE, SINK_THRESHOLD, sinks
from models.vocabulary import KIND_TITLES

SHOWN_WITHOUT_SINKS = 5     # heads listed when none reaches the threshold: the strongest candidates


def sinks_table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame({
        "head": [row["head"] for row in rows], "kind": [KIND_TITLES[row["kind"]] for row in rows],
        "share by weight": [row["weight"] for row in rows], "first token": [row["weight_first"] for row in rows],
        "special tokens": [row["weight_special"] for row in rows],
        "punctuation": [row["weight_punctuation"] for row in rows],
        "share by norm": [row["norm"] for row in rows], "uniform attention": [row["chance"] for row in rows],
        "largest sink": [row["token"] for row in rows]})


def show_sinks(checkpoint, trace) -> None:
    """The section: the sink heads of the sentence, as a table, or the strongest candidates when there are none."""
    st.header("Attention sinks on your sentence")
    st.caption(f"Share of a head's attention (each query's row, averaged over the queries) on the first token, on "
               f"end-of-sentence and other special tokens ([SEP], </s>) and on punctuation: Clark et al. 2019 found "
               f"BERT's heads parking attention on [SEP] and punctuation, Xiao et al. 2023 on the first token. A head "
               f"is a sink at ≥ {SINK_THRESHOLD:.0%} by weight and ≥ {OVER_CHANCE:.0f}× uniform attention: most of "
               "what it attends to carries no content, far beyond chance. “Share by norm” is the same share of "
               "Kobayashi et al.'s ‖α·f(x)‖ (what the keys add to the query), “uniform attention” what equal weights "
               "on every visible key would give. `python -m explorer sinks` averages it over a corpus.")
    rows = sorted(sinks(trace, checkpoint), key=lambda row: -row["weight"])
    flagged = [row for row in rows if row["sink"]]
    if flagged:
        by_norm = sum(row["sink_by_norm"] for row in flagged)
        st.write(f"**{len(flagged)} of {len(rows)} heads** are sinks on this sentence by weight; {by_norm} of them "
                 "by norm too.")
    else:
        st.info(f"No head puts {SINK_THRESHOLD:.0%} or more (and {OVER_CHANCE:.0f}× uniform attention) of its "
                f"attention on these tokens in this sentence; the {SHOWN_WITHOUT_SINKS} largest shares:")
    st.dataframe(sinks_table(flagged or rows[:SHOWN_WITHOUT_SINKS]), hide_index=True, key="sinks_table",
                 column_config={column: st.column_config.NumberColumn(format="%.2f") for column in (
                     "share by weight", "first token", "special tokens", "punctuation", "share by norm",
                     "uniform attention")})
