"""Prune heads and watch the output change (Michel et al. 2019; Voita et al. 2019). Per browser session."""


import pandas as pd
import streamlit as st

from explorer.analyses.shipped_analyses import cached_analysis, corpus_hash, shipped
from explorer.figures.pruning import curve_figure, diff_html, step_comparison_figure
from explorer.capture.head_sets import HeadSpec, HeadSpecError, all_heads, format_heads, head_set, parse_heads
from explorer.analyses.corpus_scoring import scorer_for
from explorer.analyses.distributed import DistributedError, engine_for, workers_for
from explorer.analyses.pruning import (CURVE_KINDS, DEFAULT_NORMALISATION, NORMALISATIONS, compare_steps, curve_heads,
                              curve_rows, importance_scores, least_important, pruning_curve, token_diff)
from explorer.analyses.head_table import head_table, heads_without_role
from explorer.capture.translation import bleu
from models.data import CorpusError
from models.interface import FILL_MASK, TRANSLATE
from models.vocabulary import KIND_TITLES
from explorer.figures.common import plural
from pages.components.session import (DEFAULT_CORPUS, corpus_score, current_checkpoint, current_trace, example_translations,
                           weights_mtime)
from pages.components.glossary_links import linked, term_help
from pages.components.jobs import corpus_job
from pages.components.widgets import analysis_folder, corpus_file, corpus_lines, ray_settings, remember_retries, show_figure, show_retries
from pages.components.head_analyses import head_analysis, role_thresholds

KEEP = "session"      # a choice made here is still there when the person comes back from another page

checkpoint = current_checkpoint()
path = str(checkpoint.path)
heads = all_heads(checkpoint)
kinds = [kind for kind in KIND_TITLES if checkpoint.layers(kind)]          # the kinds this model has
toggle_key = {spec: f"prune_{checkpoint.name}_{spec}" for spec in heads}
# Shipped with the model, or computed in this session on the Heads page.
analyses = f"{path}|{checkpoint.target_language}"           # as the Heads page keeps them
importance, roles = head_analysis("importance", checkpoint), head_analysis("roles", checkpoint)
# Translation models are scored by BLEU; language models by perplexity on a text (lower is better).
translates = checkpoint.task == TRANSLATE
has_output = checkpoint.task != FILL_MASK


def set_pruned(pruned: set) -> None:
    for spec in heads:
        st.session_state[toggle_key[spec]] = spec in pruned


# The pruned heads live in the session (url_state: "url_pruned", also the link's `pruned=`); the boxes are drawn
# from them whenever Streamlit has forgotten the boxes' own state (the first visit, or back from another page).
if any(toggle_key[spec] not in st.session_state for spec in heads):
    try:
        kept_pruned = set(parse_heads(st.session_state.get("url_pruned", ""), checkpoint))
    except HeadSpecError as error:
        st.warning(f"The pruned heads “{st.session_state.get('url_pruned')}” cannot be used with this model: {error}")
        kept_pruned = set()
    for spec in heads:
        st.session_state.setdefault(toggle_key[spec], spec in kept_pruned)


NORMALISATION_LABELS = {"raw": "raw gradient importance", "layer": "importance normalised per layer (Michel et al.)"}

st.title("Prune heads")
st.caption("Switch attention heads off and watch what the output loses: the output with and without them, the change "
           "at every step, and a score over many sentences.", help=term_help("pruning"))
normalisation = st.radio("Order heads by", list(NORMALISATIONS), index=list(NORMALISATIONS).index(DEFAULT_NORMALISATION),
                         format_func=NORMALISATION_LABELS.get, key="prune_normalisation", persist_state=KEEP, horizontal=True,
                         disabled=importance is None, help=term_help("head importance"))
if importance:
    st.caption(f"Importance measured on {importance['corpus'].get('name') or 'a corpus'} "
               f"({importance['corpus']['pairs']} {'sentence pairs' if translates else 'lines'}).")
else:
    st.caption("This model has no head importance yet: compute it on the Heads page (“Recompute on your own "
               "corpus”) to prune the least important heads and draw the pruning curve.")
ticked = {spec for spec in heads if st.session_state.get(toggle_key[spec])}
fraction = st.slider("Least important heads to prune", 0, 100, 25, 5, format="%d%%", key="prune_fraction",
                     persist_state=KEEP, disabled=importance is None, help=term_help("pruning"))
least = set(least_important(importance_scores(importance, normalisation), fraction / 100, heads)) if importance else set()
# "Keep only heads with a role" at the thresholds set on the Heads page (or the defaults).
thresholds = role_thresholds()
without_role = heads_without_role(head_table(roles, None, thresholds)) if roles else list(heads)
# Each button says what it does to the heads ticked now, with counts, before it is clicked: one adds to them, the
# other two replace them. A row that wraps: whole labels at a projector's 1024 px.
presets = st.container(horizontal=True)
presets.button(f"Add the {len(least)} least important", key="prune_least", disabled=importance is None,
               on_click=lambda: set_pruned(ticked | least),
               help=f"Adds the {fraction}% least important heads to those ticked: {len(ticked | least)} pruned after.")
presets.button("Keep only heads with a role", key="prune_roles", disabled=len(without_role) == len(heads),
               on_click=lambda: set_pruned(set(without_role)),
               help=f"Replaces the ticked heads: prunes the {len(without_role)} of {len(heads)} heads that have no "
                    "role at the Heads page's thresholds.")
presets.button("Prune none", key="prune_none", on_click=lambda: set_pruned(set()), help="Unticks every head.")
said = [f"“Add the {len(least)} least important” keeps your {len(ticked)} ticked and adds "
        f"{len(least - ticked)} ({len(ticked | least)} pruned after)" if importance else ""]
if roles is None:
    said.append("no head roles for this model yet (the Heads page computes them)")
elif len(without_role) < len(heads):
    said.append(f"“Keep only heads with a role” replaces your ticks: it keeps {len(heads) - len(without_role)} "
                f"heads and prunes {len(without_role)}")
st.caption("; ".join(part for part in said if part) + ".")
if roles is not None and len(without_role) == len(heads):
    st.info("No head has a role at the current thresholds, so \"Keep only heads with a role\" would prune every "
            "head; it is off. Lower the thresholds on the Heads page to see the strongest candidates get one.")

with st.expander("Heads (ticked = pruned)", expanded=True):
    st.caption("Each box is one head, numbered 0 to "
               f"{checkpoint.heads - 1} in its layer: box 5 of cross-attention layer 2 is head cross.2.5.")
    for kind in kinds:
        st.markdown(f"**{KIND_TITLES[kind]}**")
        for layer in range(checkpoint.layers(kind)):
            # Short labels in a wrapping row: a number per head stays whole where "cross.2.5" was cut to "c…".
            row = st.container(horizontal=True, vertical_alignment="center")
            row.caption(f"layer {layer}")
            for head in range(checkpoint.heads):
                spec = HeadSpec(kind, layer, head)
                row.checkbox(str(head), key=toggle_key[spec], width="content")
pruned = head_set(spec for spec in heads if st.session_state.get(toggle_key[spec]))
# The pruned heads travel in the URL (pages/components/url_state.py): shared links open with the same heads pruned.
st.session_state["url_pruned"] = format_heads(pruned)
if pruned:
    st.query_params["pruned"] = format_heads(pruned)
elif "pruned" in st.query_params:
    del st.query_params["pruned"]
st.caption(f"{len(pruned)} of {plural(len(heads), 'head')} pruned" + (f": {format_heads(pruned)}" if pruned else ""))

_, base = current_trace(pruned=())
_, after = current_trace(pruned, notices=False)
if not pruned:
    # Nothing to compare: the same output twice, a flat KL line and BLEU 100 read as "pruning does nothing".
    st.info("No head is pruned yet: tick heads above" + (f", or press “Add the {len(least)} least important”"
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
    show_figure(step_comparison_figure(steps), "prune-step-probabilities",
                pd.DataFrame({"token": steps.tokens, "p unpruned": steps.unpruned, "p pruned": steps.pruned,
                              "KL": steps.kl}))
else:
    st.caption("A masked language model has no output text to compare: its masked-token perplexity on a text, below, "
               "shows what the pruning costs (and the Decoding page's masked-token view, which heads a prediction "
               "leans on).")

if pruned:       # a score of the pruned model against itself says nothing
    st.header("On a corpus")
    if translates:
        measures = ["the example sentences: pruned vs unpruned output", "BLEU against references"]
    elif has_output:
        # Continuing the examples runs a language model to its length limit on each (no end token in sight): seconds
        # for a GPT-2-sized model, so not on arrival; perplexity is scored when asked.
        measures = ["perplexity of a text", "the example sentences: pruned vs unpruned output"]
    else:
        measures = ["perplexity of a text"]
    corpus_choice = st.radio("Measure", measures, key="prune_corpus", persist_state=KEEP, horizontal=True)


    if corpus_choice.startswith("the example"):
        modified = weights_mtime(path)
        reference = example_translations(path, modified, (), checkpoint.target_language)
        output = example_translations(path, modified, pruned, checkpoint.target_language)
        st.metric("BLEU of the pruned output against the unpruned output", f"{bleu(output, reference):.1f}",
                  help=term_help("BLEU"))
    else:
        if translates:
            source = corpus_file("Source file", "prune_src", DEFAULT_CORPUS / "val.en.gz")
            reference = corpus_file("References", "prune_ref", DEFAULT_CORPUS / "val.de.gz")
        else:
            source, reference = corpus_file("Text file, one example per line", "prune_src", DEFAULT_CORPUS / "val.en.gz"), None
        limit = st.number_input("Sentence pairs" if translates else "Lines", 10, 5000, 200, key="prune_limit",
                                persist_state=KEEP)
        # Scoring a corpus translates it twice: only when asked, never on every head toggle.
        if st.button("Score the corpus", key="prune_score", disabled=not (source and (reference or not translates))):
            try:
                sources, references, name = corpus_lines(source, reference, limit)
                with corpus_job("scoring the corpus"):
                    with st.spinner(f"Scoring {len(sources)} lines with and without the pruned heads…"):
                        scores = [corpus_score(path, weights_mtime(path), tuple(sources),
                                               tuple(references) if references else None, heads, checkpoint.target_language)
                                  for heads in (pruned, ())]
                st.session_state["prune_corpus_score"] = ((name, limit, pruned), *scores)
            except CorpusError as error:
                st.error(str(error))
        scored = st.session_state.get("prune_corpus_score")
        if scored:
            (name, scored_limit, scored_heads), after_score, before_score = scored
            metric = "BLEU" if translates else "Perplexity"
            st.metric(f"{metric} on the first {scored_limit} {'pairs' if translates else 'lines'} of {name}"
                      + (", pruned" if scored_heads else ""), f"{after_score:.2f}", f"{after_score - before_score:+.2f} vs unpruned",
                      delta_color="normal" if translates else "inverse", help=term_help("BLEU" if translates else "perplexity"))
            if scored_heads != pruned:
                st.caption("The pruned heads have changed since: score again to update.")

st.header("Pruning curve", help=term_help("pruning", "head importance"))
st.caption(f"{'BLEU' if translates else 'Perplexity'} as heads are masked, least important first (gradient "
           "importance, Michel et al. 2019) versus in random orders — the experiment of Michel et al. Fig. 2 and Voita et al. Draw it on other sentences than "
           "the importance was measured on (the default: importance from val, curve on test_2016_flickr), or the "
           "order has seen the answers.")
curve = shipped(checkpoint, "head_pruning_curve.json")
with st.form("prune_curve"):
    settings = st.columns([3, 2, 2, 2])     # the kinds box wide enough for its four chips
    offered = [kind for kind in CURVE_KINDS if curve_heads(kind, heads)]
    curve_kinds = settings[0].multiselect("Kinds", offered, default=offered, key="curve_kinds", persist_state=KEEP)
    curve_steps = settings[1].number_input("Points", 2, 20, 10, key="curve_steps", persist_state=KEEP)
    seeds = settings[2].number_input("Random seeds", 0, 10, 3, key="curve_seeds", persist_state=KEEP)
    pairs = settings[3].number_input("Sentence pairs" if translates else "Lines", 10, 5000, 200, key="curve_pairs", persist_state=KEEP)
    curve_source = corpus_file("Source file" if translates else "Text file, one example per line", "curve_src",
                               DEFAULT_CORPUS / "test_2016_flickr.en.gz")
    curve_reference = (corpus_file("References", "curve_ref", DEFAULT_CORPUS / "test_2016_flickr.de.gz")
                       if translates else None)
    workers, address = ray_settings("curve")
    compute = st.form_submit_button("Compute the curve", disabled=importance is None)
if compute and curve_kinds:
    try:
        sources, references, corpus_name = corpus_lines(curve_source, curve_reference, pairs)
        key = corpus_hash("\n".join(sources).encode(), "\n".join(references or []).encode(),
                          f"{sorted(curve_kinds)}-{curve_steps}-{seeds}-{normalisation}".encode())
        scorer = scorer_for(checkpoint, sources, references)
        with corpus_job("the pruning curve"), workers_for(path, workers, address) as runner:
            bar = st.progress(0.0, text="Pruning and scoring…")
            engine = engine_for(runner, scorer, sources, references)

            def compute_curve() -> dict:
                return pruning_curve(scorer, importance_scores(importance, normalisation), tuple(curve_kinds),
                                     curve_steps, seeds, progress=lambda f: bar.progress(f),
                                     corpus_name=corpus_name,
                                     importance_corpus=importance["corpus"].get("name", ""), measure=normalisation,
                                     set_scores=engine.set_scores if engine else None)

            st.session_state[f"curve:{analyses}"] = cached_analysis("curve", checkpoint, key, compute_curve,
                                                                    analysis_folder(curve_source, curve_reference))
            remember_retries(runner, "curve")
        show_retries("curve")
    except (CorpusError, ValueError, DistributedError) as error:
        st.error(str(error))
curve = st.session_state.get(f"curve:{analyses}", curve)
if curve:
    show_figure(curve_figure(curve), f"{checkpoint.name}-pruning-curve", pd.DataFrame(curve_rows(curve)))
