"""The head analyses a session sees, in one place that knows where they are kept: roles and importance computed on
the Heads page in this session (per model and target language), else those shipped with the model; and the role
thresholds last set there. The Heads page writes them; Prune and Compare read them."""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from explorer.analyses.corpus.results import ImportanceReport, RolesReport
from explorer.analyses.corpus.roles import Thresholds
from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, REPORTS, ROLES_FILE, shipped_report

FILES = {"roles": ROLES_FILE, "importance": IMPORTANCE_FILE}


def _key(what: str, model) -> str:
    return f"{what}:{model.path}|{model.target_language}"


def head_analysis(what: str, model) -> RolesReport | ImportanceReport | None:
    """"roles" or "importance" of a model, read by field: this session's, else shipped with it, else None."""
    kept = st.session_state.get(_key(what, model))
    return REPORTS[FILES[what]].from_json(kept) if kept else shipped_report(model, FILES[what])


def keep_head_analysis(what: str, model, result: RolesReport | ImportanceReport) -> None:
    """A result computed in this session, for every page that shows the model's heads."""
    st.session_state[_key(what, model)] = result


def role_thresholds() -> Thresholds:
    """The thresholds this session set last on the Heads page (the defaults before)."""
    return Thresholds(**st.session_state.get("role_thresholds", asdict(Thresholds())))


def keep_role_thresholds(thresholds: Thresholds) -> None:
    st.session_state["role_thresholds"] = asdict(thresholds)
