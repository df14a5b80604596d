"""The Papers page's live demonstration for Olsson et al. 2022: a 2-layer attention-only model trained on repeated
random sequences on this CPU, its loss and induction score over the steps (explorer/analyses/lecture/induction_demo.py)."""

from __future__ import annotations

import streamlit as st

from explorer.analyses.lecture.induction_demo import run_demo, shipped_demo, summary
from explorer.figures.induction_demo import induction_demo_figure
from explorer.pages.components.jobs import corpus_job
from explorer.pages.components.widgets import show_figure


def show_induction_demo() -> None:
    st.markdown("**Live: induction heads forming.** No bundled model is a language model, so the bench trains one: a "
                "2-layer attention-only Transformer on random token sequences, each repeated, on this CPU. Olsson et "
                "al.'s phase change is the loss on the second repeat falling while a layer-2 head's induction score rises.")
    result = st.session_state.get("induction_demo") or shipped_demo()
    if st.button("Train it again here (about 2 minutes)", key="induction_demo_run"):
        with corpus_job("training the induction-head demonstration"):
            bar = st.progress(0.0, text="Training…")
            st.session_state["induction_demo"] = result = run_demo(progress=lambda f: bar.progress(f))
    if result is None:
        st.info("No run shipped: train it with the button above.")
        return
    st.caption(summary(result))
    show_figure(induction_demo_figure(result), "induction-demo", None)
