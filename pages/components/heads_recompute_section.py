"""The Heads page's "Recompute on your own corpus" (under the head table of Roles and importance): head roles on
plain sentences and/or a CoNLL-U treebank, head importance on a corpus, each as a queued corpus job
(pages/components/jobs.py) whose result the page keeps for this session (pages/components/head_analyses.py)."""

from __future__ import annotations

import streamlit as st

from explorer.analyses.corpus.corpus_scoring import Scorer
from explorer.analyses.defaults import RARE_COMMON_TOP, RARE_FILTER_SOURCE
from explorer.analyses.jobs.jobs import run_job
from explorer.capture.treebank import trees_of
from explorer.models.data import CorpusError, lines_of
from explorer.pages.components.access import policy
from explorer.pages.components.corpus_inputs import analysis_folder, corpus_file, corpus_lines, ray_settings, show_retries
from explorer.pages.components.head_analyses import keep_head_analysis
from explorer.pages.components.jobs import run_queued_job
from explorer.pages.components.session import DEFAULT_CORPUS, DEFAULT_TREEBANK


def run_corpus_analysis(what: str, job, checkpoint) -> None:
    """Head roles or importance on a corpus, as a queued job with a progress bar (run_queued_job): job() reads the
    files and returns compute(progress); the result is kept in this session (keep_head_analysis) and the page runs
    again. A bad file or a Ray failure is said on the page."""
    if run_queued_job(f"computing head {what}", f"Computing head {what}…", job,
                      lambda result: keep_head_analysis(what, checkpoint, result), "heads",
                      ray_failure="Could not compute on Ray: ", file_failure="Cannot use these files: "):
        st.rerun()


def recompute_on_your_corpus(checkpoint, scorer: type[Scorer]) -> None:
    """scorer: the model's Scorer class (corpus_task): whether importance needs references, what an example is.
    Drawn only while open (a lazy expander): its twelve boxes and buttons, folded, still took the browser 0.15 s of
    each change to the Heads page."""
    box = st.expander("Recompute on your own corpus", key="heads_recompute", on_change="rerun")
    if not box.open:
        return
    with box:
        st.caption(("Results of the bundled corpora are cached on disk; of an upload, kept in this browser session only "
                    "(this server writes nothing of yours to its disk). " if policy().serving else
                    "Results are cached on disk by (checkpoint, corpus), and shown in this browser session only. ") +
                   "Positional, rare-token and confidence statistics mean most on sentences like the training data; "
                   "syntactic roles need gold trees.")
        workers, address = ray_settings("heads")
        show_retries("heads")
        text_file = corpus_file("Plain sentences, one per line (plain or .gz)", "heads_text", DEFAULT_CORPUS / "val.en.gz")
        treebank = corpus_file("Treebank (CoNLL-U, plain or .gz) for syntactic roles", "heads_treebank", DEFAULT_TREEBANK)
        common_top = st.number_input("Rare-token statistics skip sentences whose rarest token is among the N most "
                                     "frequent", 0, 100_000, RARE_COMMON_TOP, step=100, key="heads_rare_common_top",
                                     help=RARE_FILTER_SOURCE + ". 0 counts every sentence.")
        if st.button("Compute roles", key="heads_compute_roles", disabled=not (text_file or treebank)):
            def roles_job():
                text_data, text_source, text_name = text_file.read()
                tree_data, tree_source, tree_name = treebank.read()
                sentences = lines_of(text_data, text_source) if text_data else None
                trees = trees_of(tree_data, tree_source) if tree_data else None
                if not sentences and not trees:
                    raise CorpusError(f"{text_source or tree_source}: holds no sentences")
                return lambda progress: run_job(
                    "roles", checkpoint, {"sentences": sentences, "trees": trees},
                    {"text_name": text_name, "treebank_name": tree_name, "common_top": int(common_top)}, workers,
                    address, progress,
                    analysis_folder(text_file, treebank))
            run_corpus_analysis("roles", roles_job, checkpoint)
        if scorer.needs_references:
            source = corpus_file("Source sentences for importance", "heads_src", DEFAULT_CORPUS / "val.en.gz")
            reference = corpus_file("Their reference translations (aligned)", "heads_ref", DEFAULT_CORPUS / "val.de.gz")
        else:
            source = corpus_file("Text for importance, one example per line (scored by its "
                                 + scorer.loss_name + ")",
                                 "heads_src", DEFAULT_CORPUS / "val.en.gz")
            reference = None
        limit = st.number_input(f"{scorer.example_noun.capitalize()} (at most)", 10, 5000, 500,
                                key="heads_limit")
        if st.button("Compute importance", key="heads_compute_importance",
                     disabled=not (source and (reference or not scorer.needs_references))):
            def importance_job():
                sources, references, corpus_name = corpus_lines(
                    source, reference if scorer.needs_references else None, limit)
                return lambda progress: run_job(
                    "importance", checkpoint, {"sources": sources, "references": references},
                    {"corpus_name": corpus_name}, workers, address, progress, analysis_folder(source, reference))
            run_corpus_analysis("importance", importance_job, checkpoint)
