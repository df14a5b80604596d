"""The Internals page's "Q, K, V walkthrough": one query token's arithmetic in one head, from q, k and v through the
scores, the mask and softmax to z and the block's output, with the model's own numbers
(explorer/analyses/sentence/internals.py)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.sentence.internals import default_query, qkv_walkthrough, walkthrough_table
from explorer.figures.common import plural
from explorer.figures.walkthrough import scaling_words, walkthrough_figure
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.widgets import show_figure


def numbers_table(table: pd.DataFrame, key: str) -> None:
    """A table of numbers to 3 decimals, formatted in the browser: pandas' Styler, formatting on the server, took
    ~60% of the Q, K, V tab's run on h8 at 45 words (py-spy), and 1.3 s for 500 keys × 193 columns."""
    table = table.rename(columns=str)
    st.dataframe(table, key=key, column_config={column: st.column_config.NumberColumn(format="%.3f")
                                                for column in table.columns})


def walkthrough(checkpoint, trace, picked: tuple) -> None:
    """`picked`: the page's kind, layer, head and the kind's query and key tokens (chosen above the tab)."""
    kind, layer, head, queries, keys = picked
    # Default to a query in the middle of the sentence: the decoder's first query (<s>) sees one key, so its
    # softmax is trivially 1 and shows nothing of the arithmetic.
    url_state.kept("internals_query", "query", range(len(queries)), tokens=queries)
    query = st.selectbox("Query token", range(len(queries)), index=default_query(queries),
                         format_func=lambda i: f"{i}: {queries[i]}", key="internals_query")
    url_state.keep("query", query)
    walk = qkv_walkthrough(checkpoint, trace, kind, layer, head, query)
    st.caption(f"{linked('d_k')} = {checkpoint.d_k}. {linked('query, key, value', 'q')} is the query token's vector "
               f"for head {head}; each key token has a k and a v. "
               f"Score = q·k {scaling_words(walk.scaling, checkpoint.d_k)}"
               f"{' + the relative position bias of its offset' if walk.biased else ''}; masked keys get −∞; softmax "
               f"gives the weights; {linked('z')} = Σ weight × v.")
    st.markdown("**q** (query vector)")
    numbers_table(pd.DataFrame([walk.q], index=["q"]), "walk_q")
    show_figure(walkthrough_figure(walk, keys, queries[query], checkpoint.d_k), f"{kind}-L{layer}-H{head}-q{query}-walkthrough",
                pd.DataFrame({"key": keys, "q·k": walk.dots, "scaled": walk.scaled, "masked": walk.masked,
                              "softmax": walk.weights}))
    st.markdown("**k and v of every key, the weights, and weight × v** (rows: keys)")
    numbers_table(walkthrough_table(walk, keys), "walk_kv")
    st.markdown(f"**z = Σ weight × v** for head {head}, then the {plural(checkpoint.heads, 'head')}' z concatenated "
                f"({checkpoint.heads} × {checkpoint.d_k} = {len(walk.concatenated)} numbers) times W_O (+ bias): the "
                f"block's output ({len(walk.output)} numbers).", help=term_help("z", "W_O"))
    numbers_table(pd.DataFrame([walk.z], index=["z"]), "walk_z")
    # T5's heads × d_k need not be d_model: rows of two lengths, the shorter padded (Series align on their index)
    numbers_table(pd.DataFrame([pd.Series(walk.concatenated), pd.Series(walk.output)],
                               index=["concat(z_1…z_h)", "· W_Oᵀ + b"]), "walk_out")
