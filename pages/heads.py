"""Heads: which are positional, syntactic, rare-token (Voita et al. 2019), how confident, and which matter."""

from dataclasses import asdict, fields

import streamlit as st

from explorer.analyses.defaults import OURS, PAPER, THRESHOLD_SOURCES, Thresholds
from explorer.analyses.registry import registered
from explorer.pages.components.detector_section import show_head_detectors
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.head_analyses import head_analysis, keep_role_thresholds, role_thresholds
from explorer.pages.components.heads_one_head_section import one_head
from explorer.pages.components.heads_roles_section import roles_and_importance
from explorer.pages.components.heads_training_section import training
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.registered_analysis_section import show_registered
from explorer.pages.components.session import current_checkpoint
from explorer.pages.components.sinks_section import show_sinks
from explorer.pages.components.traces import sentence_trace
from explorer.pages.components.widgets import one_tab_at_a_time

checkpoint = current_checkpoint()
pruning_notice(checkpoint, "full", "roles and importance are measured on the model as trained, over a corpus, to "
               "choose which heads to prune; the Prune page applies them.")
st.title("Heads")
st.caption("Which job each attention head seems to do (look at a fixed neighbour, follow the grammar, watch the rarest "
           "word) and how much the model needs it; in the maps each square is one head and each row a layer.",
           help=term_help("head", "layer"))
# What happened to the current sentence (cut, recased, unfamiliar to the model, empty) is said here, under the
# title, on every tab; the tabs that read the sentence (One head at its end, Attention sinks) take its trace, the
# others go on without it.
_, trace = sentence_trace(())
roles, importance = head_analysis("roles", checkpoint), head_analysis("importance", checkpoint)

with st.expander("Thresholds (change them to re-classify; the scores behind them stay the same)"):
    # Start from the thresholds this session set last (widget state is dropped when the page is left).
    remembered = asdict(role_thresholds())
    columns = st.columns(5)
    values = {}
    for column, field in zip(columns, fields(Thresholds)):
        value = remembered[field.name]
        values[field.name] = column.number_input(field.name.replace("_", " "), value=value, key=f"threshold_{field.name}",
                                                 step=1 if isinstance(value, int) else 0.05,
                                                 help=THRESHOLD_SOURCES[field.name])
    thresholds = Thresholds(**values)
keep_role_thresholds(thresholds)   # for the next visit, and for the Prune page
# Which thresholds are the paper's and which this project's own, said where they are read (each box's help says why).
st.caption("Thresholds: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in asdict(thresholds).items())
           + f". Positional and syntactic margin are {PAPER}'s; the others are {OURS}.")


def sinks_on_the_sentence() -> None:
    if trace is not None:
        show_sinks(checkpoint, trace)          # attention sinks on the sentence (pages/components/sinks_section.py)


# One part at a time, as on the Attention and Internals pages: only the open tab runs and is drawn (the whole
# page at once took over 1 s to draw in the browser on a change of page); the tab is kept in the URL.
# Roles and importance: pages/components/heads_roles_section.py; One head: heads_one_head_section.py (the role maps,
# the table and one head's figures on one tab took 1.4 s to draw at 45 words); Head detectors (Olsson et al.):
# detector_section.py; During training: heads_training_section.py.
PARTS = {"Roles and importance": lambda: roles_and_importance(checkpoint, roles, importance, thresholds),
         "One head": lambda: one_head(checkpoint, roles, importance, thresholds, trace),
         "Head detectors": lambda: show_head_detectors(checkpoint),
         "During training": lambda: training(checkpoint, thresholds), "Attention sinks": sinks_on_the_sentence}
# Then a tab for each registered analysis that applies to this model (explorer/analyses/sentence/).
PARTS.update({analysis.title: lambda analysis=analysis: show_registered(analysis, checkpoint, trace)
              for analysis in registered().values() if analysis.applies(checkpoint)})
one_tab_at_a_time(PARTS, "heads_part", "section")
