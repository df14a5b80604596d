"""The Prune page's "On a corpus": the pruned model scored against the unpruned one, on the example sentences
(BLEU of one output against the other) or on a corpus (BLEU against references, or perplexity of a text), as a
queued corpus job (pages/components/jobs.py) whose score the page keeps."""

from __future__ import annotations

import streamlit as st

from explorer.analyses.corpus.corpus_scoring import corpus_task
from explorer.capture.translation import bleu
from explorer.models.data import CorpusError
from explorer.models.interface import Generates
from explorer.pages.components.caches import corpus_score, example_translations
from explorer.pages.components.corpus_inputs import corpus_file, corpus_lines
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.jobs import corpus_job
from explorer.pages.components.session import DEFAULT_CORPUS
from explorer.service import ModelRef

KEEP = "session"      # a choice made here is still there when the person comes back from another page


def show_corpus_score(checkpoint, pruned) -> None:
    path = str(checkpoint.path)
    # The model's Scorer: its metric (BLEU, perplexity), which way is better, what its examples are called, and
    # whether it needs references (a translation model's sentence pairs) or scores a plain text.
    scorer = corpus_task(checkpoint)
    has_output = isinstance(checkpoint, Generates)
    st.header("On a corpus")
    if scorer.needs_references:
        measures = ["the example sentences: pruned vs unpruned output", f"{scorer.metric} against references"]
    elif has_output:
        # Continuing the examples runs a language model to its length limit on each (no end token in sight): seconds
        # for a GPT-2-sized model, so not on arrival; perplexity is scored when asked.
        measures = [f"{scorer.metric} of a text", "the example sentences: pruned vs unpruned output"]
    else:
        measures = [f"{scorer.metric} of a text"]
    corpus_choice = st.radio("Measure", measures, key="prune_corpus", persist_state=KEEP, horizontal=True)

    if corpus_choice.startswith("the example"):
        ref = ModelRef.of(path)
        reference = example_translations(ref, (), checkpoint.target_language)
        output = example_translations(ref, pruned, checkpoint.target_language)
        st.metric("BLEU of the pruned output against the unpruned output", f"{bleu(output, reference):.1f}",
                  help=term_help("BLEU"))
    else:
        if scorer.needs_references:
            source = corpus_file("Source file", "prune_src", DEFAULT_CORPUS / "val.en.gz")
            reference = corpus_file("References", "prune_ref", DEFAULT_CORPUS / "val.de.gz")
        else:
            source, reference = corpus_file("Text file, one example per line", "prune_src", DEFAULT_CORPUS / "val.en.gz"), None
        limit = st.number_input(scorer.example_noun.capitalize(), 10, 5000, 200, key="prune_limit",
                                persist_state=KEEP)
        # Scoring a corpus translates it twice: only when asked, never on every head toggle.
        if st.button("Score the corpus", key="prune_score",
                     disabled=not (source and (reference or not scorer.needs_references))):
            try:
                sources, references, name = corpus_lines(source, reference, limit)
                with corpus_job("scoring the corpus"), \
                        st.spinner(f"Scoring {len(sources)} lines with and without the pruned heads…"):
                    scores = [corpus_score(ModelRef.of(path), tuple(sources),
                                           tuple(references) if references else None, heads, checkpoint.target_language)
                              for heads in (pruned, ())]
                st.session_state["prune_corpus_score"] = ((name, limit, pruned), *scores)
            except CorpusError as error:
                st.error(str(error))
        scored = st.session_state.get("prune_corpus_score")
        if scored:
            (name, scored_limit, scored_heads), after_score, before_score = scored
            st.metric(f"{scorer.metric_title} on the first {scored_limit} {scorer.example_word}s of {name}"
                      + (", pruned" if scored_heads else ""), f"{after_score:.2f}",
                      f"{after_score - before_score:+.2f} vs unpruned",
                      delta_color="normal" if scorer.higher_is_better else "inverse", help=term_help(scorer.metric))
            if scored_heads != pruned:
                st.caption("The pruned heads have changed since: score again to update.")
