"""Patching: activation patching, or causal tracing (Meng et al. 2022; Vig et al. 2020), of the sidebar's sentence
against a corrupted copy with one word changed (explorer/analyses/sentence/patching.py)."""

import pandas as pd
import streamlit as st

from explorer.analyses.sentence.patching import METRICS, PatchingResult, marked_changes, patch, suggested_swap
from explorer.capture.inputs import app_casing
from explorer.figures.detectors import patching_maps
from explorer.models.interface import Embeds
from explorer.pages.components import url_state
from explorer.pages.components.caches import cached_model
from explorer.pages.components.glossary_links import linked, term_help
from explorer.pages.components.notices import greedy_notice, pruning_notice
from explorer.pages.components.session import chosen_ref, selection
from explorer.pages.components.traces import current_trace
from explorer.pages.components.widgets import command_line, show_figure
from explorer.service import ModelRef
from explorer.settings import command_name

METRIC_LABELS = {"total": "the whole output", "first": "its first token"}


@st.cache_data(max_entries=32, show_spinner="Patching every head and layer…")
def cached_patching(ref: ModelRef, target_language: str, clean: str, corrupt: str, metric: str,
                    fix_casing: bool) -> PatchingResult:
    model = cached_model(ref, target_language)
    return patch(model, clean, corrupt, metric, app_casing(model, fix_casing))


def result_table(result: PatchingResult) -> pd.DataFrame:
    """Every patched value and the share it restores, for the CSV download."""
    rows = [{"patched": f"{kind}.{layer}.{head} z", "restored": value}
            for kind, values in result.heads.items() for (layer, head), value in pd.DataFrame(values).stack().items()]
    rows += [{"patched": f"{stack} layer {layer} output", "restored": value}
             for stack, values in result.layer_outputs.items() for layer, value in enumerate(values)]
    rows += [{"patched": "every layer's output", "restored": result.all_layers},
             {"patched": "nothing", "restored": result.nothing}]
    return pd.DataFrame(rows).set_index("patched")


def sentence_block(where, text: str, other: str) -> None:
    """A sentence in the page's font, its words that differ from other's in bold."""
    where.html(f'<p style="margin:0 0 0.5rem 0">{marked_changes(text, other)}</p>')


st.title("Patching")
st.caption("Which heads and layers carry the difference between your sentence and a copy with one word changed: each "
           "cell shows how much of your sentence's output comes back when that one part is copied from your "
           "sentence's run into the changed one's.", help=term_help("activation patching"))
checkpoint, trace = current_trace(pruned=())    # the sidebar's sentence: the notices about it, and a stop when empty
pruning_notice(checkpoint, "full", "patching copies every head's output between two runs of the model as trained; "
               "a pruned head would have nothing to copy.")
greedy_notice("the clean run's greedy output is the target every patched run is scored on.")
chosen = selection()
clean = trace.text
st.caption(f"{linked('activation patching', 'Activation patching')}, or causal tracing (Meng et al. 2022, “Locating "
           "and editing factual associations in GPT”; Vig et al. 2020, causal mediation analysis): run the model on "
           "your sentence (clean) and on a copy with one word changed (corrupted), then rerun the corrupted copy with "
           f"one value — one head's output {linked('z')}, or one layer's whole output — taken from the clean run, and "
           "measure how much of the clean "
           + (f"output that one value brings back: its embedding's {linked('cosine similarity')} with the clean one's."
              if isinstance(checkpoint, Embeds) else f"output's {linked('log-probability')} that one value brings back."))

# The corrupted box belongs to one clean sentence: a new sentence in the sidebar gets a new suggestion.
state = st.session_state
swap = suggested_swap(checkpoint, clean)
if state.get("_patching_clean") != clean:
    url_state.kept_text("patching_corrupt", "corrupt")
    if state.get("_patching_clean") is not None or "patching_corrupt" not in state:
        state["patching_corrupt"] = swap.text if swap else clean
    state["_patching_clean"] = clean
elif "patching_corrupt" not in state:
    url_state.kept_text("patching_corrupt", "corrupt")
corrupt = st.text_area("Corrupted sentence (change one word for another of as many pieces)", key="patching_corrupt",
                        help="Pre-filled with one noun of your sentence replaced by another of the same kind (a "
                             "person for a person, an animal for an animal). Clean and corrupted sentences must "
                             "have the same number of pieces, so each position has its counterpart.",
                       height="content")
url_state.keep("corrupt", corrupt)
if swap and corrupt == swap.text:
    st.caption(f"Suggested: {swap.description()}, with as many pieces. Edit the box to change another word.")
elif corrupt == clean:
    st.caption("No noun of a kind the explorer knows (a person, an animal, a place, a vehicle…) could be swapped "
               "in this sentence keeping its number of pieces: change one word in the box, for another of the same "
               "kind.")
if corrupt == clean:        # nothing changed yet: the caption above asks for a word, no error to add to it
    st.stop()
metric = "total"
if checkpoint.has("decoder"):
    url_state.kept("patching_metric", "metric", list(METRICS))
    metric = st.radio("Log-probability of the clean output", list(METRICS), format_func=METRIC_LABELS.get,
                      key="patching_metric", horizontal=True, help=term_help("log-probability"))
    url_state.keep("metric", metric)

# A sentence the model cannot patch raises InputError, which the app shows as a message (pages/components/errors.py).
result = cached_patching(chosen_ref(), checkpoint.target_language,
                         chosen.sentence, corrupt, metric, chosen.fix_casing)

# What a run is scored by: the clean output's log-probability, or a sentence encoder's cosine with the clean embedding.
measure = "cosine with the clean embedding" if isinstance(checkpoint, Embeds) else "log-probability of the clean output"
clean_side, corrupt_side = st.columns(2)
clean_side.markdown("**Clean**")
sentence_block(clean_side, result.clean, result.corrupt)
clean_side.text(f"→ {result.clean_output}")
clean_side.caption(f"{measure}: {result.lp_clean:.3f}")
corrupt_side.markdown("**Corrupted**")
sentence_block(corrupt_side, result.corrupt, result.clean)
corrupt_side.text(f"→ {result.corrupt_output}")
corrupt_side.caption(f"{measure}: {result.lp_corrupt:.3f}")
st.caption(f"In bold: the words that differ. Scored: “{result.clean_output}”, read at {result.read_at}. restored = "
           f"(patched − corrupted) / (clean − corrupted), each the {measure}: 1 brings it back, 0 changes nothing, "
           "below 0 or above 1 overshoots.")
if result.nothing_to_restore:
    st.info(f"The clean and corrupted sentences give the same {measure} "
            f"({result.lp_clean:.4f}): there is nothing to restore. Change another word.")
    st.stop()

checks = st.columns(2)
checks[0].metric("Every layer's output patched", f"{round(result.all_layers, 3) + 0.0:.1%}",
                 help="Computed: the corrupted run with every layer's output taken from the clean run. The last "
                      "layer's output decides the logits, so it restores 100%.")
checks[1].metric("Nothing patched", f"{round(result.nothing, 3) + 0.0:.1%}",
                 help="Computed: a row of the batch with nothing patched, against the corrupted run made alone: 0% "
                      "(the hooks reach their own rows only).")
title = ("Share of the clean embedding's cosine restored<br><sup>one value patched at a time from the clean run into "
         "the corrupted one</sup>" if isinstance(checkpoint, Embeds) else "")
show_figure(patching_maps(result, title), f"{checkpoint.name}-patching", result_table(result), width="content")
st.caption(f"Each cell: one head's {linked('z')} (its output before {linked('W_O')}) patched alone, for every kind, "
           f"layer and head; the last panel: one layer's whole output (the {linked('residual stream')} after it, every "
           "position). Red restores, blue moves "
           "further from the clean output. Patching every layer's output restores 100% and patching nothing 0%, "
           "as the two numbers above show. "
           + ("A layer's output at every position is the whole state every later layer reads, so each restores "
              "100%: the heads' panel is where the difference is located." if not checkpoint.has("decoder") else
              "An encoder layer's output carries everything the decoder learns of the source, so each restores "
              "~100%; a decoder layer's output leaves the later layers reading the corrupted source."))
command_line("The same from the command line: "
             f"`python -m explorer patch --model {command_name(checkpoint.path)} --clean … --corrupt … [--json]`.")
