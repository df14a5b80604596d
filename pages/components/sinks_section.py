"""The Heads page's "Attention sinks on your sentence": heads that park most of their attention on the first token,
special tokens or punctuation (explorer/analyses/sentence/sinks.py), with the share by norm beside it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.sentence.sinks import OVER_CHANCE, SINK_THRESHOLD, key_ids, sinks
from explorer.figures.common import display_tokens
from explorer.models.vocabulary import KIND_TITLES, SHORT_NAMES
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.widgets import command_line

SHOWN_WITHOUT_SINKS = 5     # heads listed when none reaches the threshold: the strongest candidates
SINK_VIEWS = {"where the share goes": ("head", "share by weight", "first token", "special tokens", "punctuation"),
              "by weight, by norm, by chance": ("head", "share by weight", "share by norm", "uniform attention",
                                                "largest sink")}


def sinks_table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame({
        "head": [row["spec"] for row in rows], "kind": [SHORT_NAMES[row["kind"]] for row in rows],
        "share by weight": [row["weight"] for row in rows], "first token": [row["weight_first"] for row in rows],
        "special tokens": [row["weight_special"] for row in rows],
        "punctuation": [row["weight_punctuation"] for row in rows],
        "share by norm": [row["norm"] for row in rows], "uniform attention": [row["chance"] for row in rows],
        "largest sink": [row["token"] for row in rows]})


def show_sinks(checkpoint, trace) -> None:
    """The section: the sink heads of the sentence, as a table, or the strongest candidates when there are none."""
    st.header("Attention sinks on your sentence", help=term_help("attention sink"))
    st.caption(f"Share of a head's attention (each query's row, averaged over the queries) on the first token, on "
               f"end-of-sentence and other special tokens ([SEP], </s>) and on punctuation: Clark et al. 2019 found "
               f"BERT's heads parking attention on [SEP] and punctuation, Xiao et al. 2023 on the first token. A head "
               f"is a sink at ≥ {SINK_THRESHOLD:.0%} by weight and ≥ {OVER_CHANCE:.0f}× uniform attention: most of "
               "what it attends to carries no content, far beyond chance. “Share by norm” is the same share of "
               f"Kobayashi et al.'s {linked('norm-based attention', '‖α·f(x)‖')} (what the keys add to the query), "
               f"“{linked('uniform attention')}” what equal weights on every visible key would give.")
    command_line("`python -m explorer sinks` averages it over a corpus.")
    rows = sorted(sinks(checkpoint, trace), key=lambda row: -row["weight"])
    flagged = [row for row in rows if row["sink"]]
    if flagged:
        by_norm = sum(row["sink_by_norm"] for row in flagged)
        st.write(f"**{len(flagged)} of {len(rows)} heads** are sinks on this sentence by weight; {by_norm} of them "
                 "by norm too.")
    else:
        st.info(f"No head puts {SINK_THRESHOLD:.0%} or more (and {OVER_CHANCE:.0f}× uniform attention) of its "
                f"attention on these tokens in this sentence; the {SHOWN_WITHOUT_SINKS} largest shares:")
    kinds, first = special_first_tokens(checkpoint, trace)
    # Half the columns at a time, each half whole in a projector's 564 px column (all nine were cut at its edge);
    # the head's name says its kind.
    view = st.segmented_control("Sink table columns", list(SINK_VIEWS), default=next(iter(SINK_VIEWS)),
                                required=True, key="sinks_columns")
    st.dataframe(sinks_table(flagged or rows[:SHOWN_WITHOUT_SINKS]), hide_index=True, key="sinks_table",
                 column_config=column_config(first), column_order=SINK_VIEWS[view])
    if first:
        st.caption(f"The first key of the {kinds} heads ({first}) is a special token, but it counts under "
                   "“first token”, not under “special tokens”: a head that parks its attention on it has its "
                   f"share there, and “largest sink” may name {first} while “special tokens” reads 0.")


def special_first_tokens(checkpoint, trace) -> tuple[str, str]:
    """(the kinds, as in the table, whose first key is a special token (<s> of a decoder's input); those tokens,
    as shown): the first-token column holds them."""
    special = [kind for kind in trace.attention
               if key_ids(trace, kind)[:1] and key_ids(trace, kind)[0] in checkpoint.special_ids]
    tokens = dict.fromkeys(trace.key_tokens(kind)[0] for kind in special)
    return "/".join(SHORT_NAMES[kind] for kind in special), ", ".join(display_tokens(list(tokens)))


def column_config(first: str) -> dict:
    """Two decimals; every column explained (its header is short so that all of them fit the page)."""
    counted = f" ({first} here)" if first else ""
    helps = {
        "head": "kind layer.head", "kind": ", ".join(f"{short}: {KIND_TITLES[kind]}"
                                                      for kind, short in SHORT_NAMES.items()),
        "share by weight": "Attention on the first token, special tokens and punctuation together",
        "first token": f"Attention on the first key, whatever it is, special tokens included{counted}",
        "special tokens": "Attention on special tokens other than the first key ([SEP], </s>)",
        "punctuation": "Attention on punctuation (other than the first key)",
        "share by norm": "The same share of ‖α·f(x)‖ (Kobayashi et al. 2020)",
        "uniform attention": "The share equal weights on every visible key would give",
        "largest sink": "The key with the largest share (the first token counts as itself, special or not)"}
    config = {column: st.column_config.Column(help=text) for column, text in helps.items()}
    config.update({column: st.column_config.NumberColumn(format="%.2f", help=helps[column]) for column in (
        "share by weight", "first token", "special tokens", "punctuation", "share by norm", "uniform attention")})
    return config
