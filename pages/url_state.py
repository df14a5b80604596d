"""The view in the address bar: model, sentence, decoding and pruned heads live in the URL's query string, so a
reload keeps them and a teacher can send a link that opens exactly this view (`?model=h2&sentence=…&beam=5`; a
multilingual model's output language as `lang=de`).

Read once per browser session (the URL wins over the defaults), written back on every run.
"""

from __future__ import annotations

import streamlit as st

RESTORED = "_url_restored"


def short_name(label: str, bundled: dict) -> str:
    """'8 heads (en-de-h8)' → 'h8': the bundled models by their short names in the URL."""
    return bundled[label].name.rsplit("-", 1)[-1]


def restore(bundled: dict, own: str, max_chars: int) -> None:
    """Put the URL's model, sentence and decoding into the session state, the first time this session runs."""
    state = st.session_state
    if state.get(RESTORED):
        return
    state[RESTORED] = True
    query = st.query_params
    if "model" in query:
        by_short = {short_name(label, bundled): label for label in bundled if (bundled[label] / "config.json").is_file()}
        if query["model"] in by_short:
            state["model"] = by_short[query["model"]]
        else:
            state["model"], state["own_model"] = own, query["model"]
    if query.get("sentence"):
        state["sentence"] = query["sentence"][:max_chars]
    beam = query.get("beam", "")
    if beam.isdigit() and int(beam) > 1:
        state["decoding"], state["beam_size"] = "beam search", min(10, int(beam))
    if query.get("pruned"):
        state["url_pruned"] = query["pruned"]
    if query.get("casing") == AS_TYPED:
        state["fix_casing"] = False
    if query.get("lang"):
        state["target_language"] = query["lang"]       # checked against the model's languages by the sidebar


AS_TYPED = "as-typed"      # ?casing=as-typed: the sentence is fed to the model as typed, not recased


def publish(model: str, sentence: str, beam_size: int, fix_casing: bool = True, target_language: str = "") -> None:
    """Write the current view into the URL (only what differs, so the address stays short)."""
    wanted = {"model": model, "sentence": sentence, "beam": str(beam_size) if beam_size > 1 else None,
              "casing": None if fix_casing else AS_TYPED, "lang": target_language or None}
    pruned = st.session_state.get("url_pruned")
    wanted["pruned"] = pruned or None
    for key, value in wanted.items():
        if value is None:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value
