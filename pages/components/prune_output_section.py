"""The Prune page's output with and without the pruned heads: the two outputs, their token-level diff and, per step
of the unpruned output, its token's probability in both models and the KL divergence between them
(explorer/analyses/corpus/pruning.py); a sentence encoder's embedding and nearest captions, pruned and whole; a masked
language model's note instead."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.pruning import compare_steps, token_diff
from explorer.capture.head_sets import head_set
from explorer.figures.decoding import plotly_bars
from explorer.figures.pruning import diff_html, step_comparison_described
from explorer.figures.token_bars import html_bars
from explorer.models.interface import Embeds, Generates
from explorer.pages.components.glossary_links import linked
from explorer.pages.components.sentence_embedding_section import show_pruned_embedding
from explorer.pages.components.traces import current_trace
from explorer.pages.components.widgets import show_table_figure


def show_pruned_output(checkpoint, pruned, least: set, importance: dict | None) -> None:
    has_output = isinstance(checkpoint, Generates)
    _, base = current_trace(pruned=())
    _, after = current_trace(pruned, notices=False)
    if not pruned:
        # Nothing to compare: the same output twice, a flat KL line and BLEU 100 read as "pruning does nothing".
        st.info("No head is pruned yet: click heads above" + (f", or press “Add the {len(least)} least important”"
                                                             if importance else "")
                + ". This page then compares the output with and without them, step by step and on a corpus.")
    elif has_output:
        st.header(checkpoint.output_title)
        left, right = st.columns(2)
        left.markdown("**Unpruned**")
        left.text(base.output_text)
        right.markdown("**Pruned**")
        right.text(after.output_text)
        st.markdown("**Token-level diff** (red: only in the unpruned output, green: only in the pruned one)")
        st.html(diff_html(token_diff(base.output_tokens, after.output_tokens)))

        steps = compare_steps(checkpoint, base, pruned)
        st.caption(f"Per step of the unpruned output: its token's probability with and without the pruned heads, and the "
                   f"{linked('KL divergence')} (in {linked('nats')}) between the two models' whole distributions there.")
        # HTML bars (explorer/figures/token_bars.py: no plotly.js to load); ⬇ HTML the plotly chart
        described = step_comparison_described(steps)
        show_table_figure(html_bars(described), "prune-step-probabilities",
                          pd.DataFrame({"token": steps.tokens, "p unpruned": steps.unpruned, "p pruned": steps.pruned,
                                        "KL": steps.kl}), interactive=lambda: plotly_bars(described))
    elif isinstance(checkpoint, Embeds):
        show_pruned_embedding(checkpoint, base, head_set(pruned))
    else:
        st.caption("A masked language model has no output text to compare: its masked-token perplexity on a text, below, "
                   "shows what the pruning costs (and the Decoding page's masked-token view, which heads a prediction "
                   "leans on).")
