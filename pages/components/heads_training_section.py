"""The Heads page's "During training" tab: how the heads formed, one line per head over the training epochs
(explorer/analyses/corpus/head_evolution.py), when the model ships that record."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from explorer.analyses.corpus.head_evolution import EVOLUTION_FILE
from explorer.analyses.corpus.shipped_analyses import shipped
from explorer.figures.head_roles import EVOLUTION_MEASURES
from explorer.models.interface import TrainingSnapshots
from explorer.pages.components.caches import evolution_chart
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.session import ref_of
from explorer.pages.components.widgets import command_line, show_figure


def training(checkpoint, thresholds) -> None:
    """How the heads formed during training: one line per head over the epochs."""
    st.header("How the heads formed during training", help=term_help("epoch"))
    evolution = shipped(checkpoint, EVOLUTION_FILE)
    if evolution is None and not isinstance(checkpoint, TrainingSnapshots):
        st.caption("This model comes without the record of its training (per-epoch snapshots), so how its heads "
                   "formed cannot be shown.")
    elif evolution is None:
        st.caption("This checkpoint ships no record of how its heads formed; it is made from a training run's per-epoch "
                   "snapshots, from the command line (below).")
        command_line("This checkpoint ships no head_evolution.json. It is made from a training run's per-epoch snapshots: "
                     "`python -m explorer evolution --model FOLDER --snapshots STATE_FOLDER --text SENTENCES`.")
    else:
        measure_label = st.radio("Per head", list(EVOLUTION_MEASURES), key="heads_evolution_measure", horizontal=True)
        value_key = EVOLUTION_MEASURES[measure_label][0]
        show_figure(evolution_chart(ref_of(checkpoint), measure_label,
                                    tuple(asdict(thresholds).items())), f"{checkpoint.name}-head-evolution",
                    pd.DataFrame([{"head": h["spec"], "epoch": epoch, measure_label: value}
                                  for h in evolution["heads"] for epoch, value in zip(evolution["epochs"], h[value_key])]))
        epochs = evolution["epochs"]
        every = "every epoch" if len(epochs) == epochs[-1] - epochs[0] + 1 else f"{len(epochs)} of its {epochs[-1]} epochs"
        st.caption(f"Each line is one head, measured after {every} of training on the in-domain sentences the roles "
                   "were measured on (Roles and importance); the dashed line is the role threshold set above. The "
                   "thick lines are the heads that end highest in each column.")
