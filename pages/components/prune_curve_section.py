"""The Prune page's "Pruning curve": BLEU or perplexity as heads are masked, least important first versus in random
orders (Michel et al. 2019, Fig. 2), computed on a corpus as a queued corpus job (pages/components/jobs.py), or
shipped with the model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.corpus_scoring import corpus_task
from explorer.analyses.corpus.pruning import CURVE_KINDS, curve_heads, curve_rows, importance_scores
from explorer.analyses.corpus.results import ImportanceReport, PruningCurve
from explorer.analyses.corpus.shipped_analyses import shipped
from explorer.analyses.jobs.corpus_jobs import order_of
from explorer.analyses.jobs.jobs import run_job
from explorer.figures.pruning import curve_figure
from explorer.pages.components.corpus_inputs import analysis_folder, corpus_file, corpus_lines, ray_settings, show_retries
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.jobs import run_queued_job
from explorer.pages.components.session import DEFAULT_CORPUS
from explorer.pages.components.widgets import show_figure

KEEP = "session"      # a choice made here is still there when the person comes back from another page


def show_pruning_curve(checkpoint, heads, importance: ImportanceReport | None, normalisation: str) -> None:
    path = str(checkpoint.path)
    analyses = f"{path}|{checkpoint.target_language}"           # as the Heads page keeps them
    scorer = corpus_task(checkpoint)      # its metric, what its examples are called, whether it needs references
    st.header("Pruning curve", help=term_help("pruning", "head importance"))
    st.caption(f"{scorer.metric_title} as heads are masked, least important first (gradient "
               "importance, Michel et al. 2019) versus in random orders — the experiment of Michel et al. Fig. 2 and "
               "Voita et al. Draw it on other sentences than the importance was measured on (the default: importance "
               "from val, curve on test_2016_flickr), or the order has seen the answers.")
    # Drawn only while open (a lazy expander): its eight boxes and buttons took the browser's time on every visit,
    # while the shipped curve below needs none of them.
    box = st.expander("Compute the curve on your own corpus", key="prune_curve_compute", on_change="rerun")
    if box.open:
        with box:
            compute_the_curve(checkpoint, heads, importance, normalisation, scorer, analyses)
    curve = st.session_state.get(f"curve:{analyses}")
    computed = curve is not None
    if curve is None and (document := shipped(checkpoint, "head_pruning_curve.json")):
        curve = PruningCurve.from_json(document)
    if computed:            # just computed here: drawn at once
        show_figure(curve_figure(curve), f"{checkpoint.name}-pruning-curve", pd.DataFrame(curve_rows(curve)))
    elif curve:
        # The shipped curve is drawn when opened (a lazy expander): a plotly figure on the page's first view made the
        # browser load plotly.js before it, and a cold link to this page took 1.55 × a one-chart app's.
        # (Its corpus is in the figure's title: in the box's label it ran past a projector's column.)
        shown = st.expander(f"Show the curve shipped with {checkpoint.name}", key="prune_curve_shipped",
                            on_change="rerun")
        if shown.open:
            with shown:
                show_figure(curve_figure(curve), f"{checkpoint.name}-pruning-curve", pd.DataFrame(curve_rows(curve)))
    else:
        st.caption("No curve for this model yet: “Compute the curve on your own corpus” above draws one"
                   + (" once the model has head importance (the Heads page computes it)." if importance is None else "."))


def compute_the_curve(checkpoint, heads, importance: ImportanceReport | None, normalisation: str, scorer,
                      analyses: str) -> None:
    """The curve's settings (kinds, points, seeds, corpus, Ray) and its computation as a queued corpus job; the
    result is kept in the session under `analyses`."""
    with st.form("prune_curve"):
        settings = st.columns([3, 2, 2, 2])     # the kinds box wide enough for its four chips
        offered = [kind for kind in CURVE_KINDS if curve_heads(kind, heads)]
        curve_kinds = settings[0].multiselect("Kinds", offered, default=offered, key="curve_kinds", persist_state=KEEP)
        curve_steps = settings[1].number_input("Points", 2, 20, 10, key="curve_steps", persist_state=KEEP)
        seeds = settings[2].number_input("Random seeds", 0, 10, 3, key="curve_seeds", persist_state=KEEP)
        pairs = settings[3].number_input(scorer.example_noun.capitalize(), 10, 5000, 200, key="curve_pairs", persist_state=KEEP)
        curve_source = corpus_file("Source file" if scorer.needs_references else "Text file, one example per line",
                                   "curve_src", DEFAULT_CORPUS / "test_2016_flickr.en.gz")
        curve_reference = (corpus_file("References", "curve_ref", DEFAULT_CORPUS / "test_2016_flickr.de.gz")
                           if scorer.needs_references else None)
        workers, address = ray_settings("curve")
        compute = st.form_submit_button("Compute the curve", disabled=importance is None)
    if compute and curve_kinds:
        def prepare():
            sources, references, corpus_name = corpus_lines(curve_source, curve_reference, pairs)
            options = {"orders": {"importance": order_of(importance_scores(importance, normalisation))},
                       "kinds": list(curve_kinds), "steps": curve_steps, "seeds": seeds,
                       "corpus_name": corpus_name, "importance_corpus": importance.corpus.name,
                       "measure": normalisation}
            return lambda progress: run_job("curve", checkpoint, {"sources": sources, "references": references},
                                            options, workers, address, progress,
                                            analysis_folder(curve_source, curve_reference))

        def keep(result: PruningCurve) -> None:
            st.session_state[f"curve:{analyses}"] = result

        if run_queued_job("the pruning curve", "Pruning and scoring…", prepare, keep, "curve"):
            show_retries("curve")
