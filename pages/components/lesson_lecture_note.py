"""The Lesson's note on the lecture's sentence: whether this model's heads do what the lecture's figure shows (a
head giving “animal” most of the weight of “it”), and a link to the same step on the partner model (the real
pretrained MiniLM beside the bundled model, and back)."""

from __future__ import annotations

import streamlit as st

from explorer.analyses.sentence.word_focus import LECTURE, percent
from explorer.models.tokenizer import clean_text
from explorer.pages.components import url_state
from explorer.pages.components.caches import cached_lecture_strongest, cached_model
from explorer.pages.components.session import model_links, partner_model, selection
from explorer.pages.registry import page
from explorer.service import ModelRef

STEPS = ("softmax", "heads", "layers")     # the steps that show a head's weights, every head, or their average
TYPICAL = 0.5                   # the lecture's figure: one head gives the antecedent most of the word's weight


def lecture_note(checkpoint, text: str, slug: str) -> None:
    sentence = next((s for s, _, _ in LECTURE if clean_text(s) == text), None)
    partner = partner_model(checkpoint)
    if slug not in STEPS or sentence is None or partner is None:
        return
    opened = selection().model_path
    here = cached_lecture_strongest(ModelRef.of(opened), sentence)
    label, path = partner
    other_model = cached_model(ModelRef.of(path))
    there = cached_lecture_strongest(ModelRef.of(path), sentence)
    if here is None or there is None:
        return
    antecedent = next(a for s, _, a in LECTURE if s == sentence)
    link = url_state.address(page("lesson").name, model=model_links()[label], sentence=sentence, lesson=slug)
    other = f"[the same step on {other_model.name}]({link}), where {there[0]} gives it {percent(there[1])}"
    if here[1] < TYPICAL:
        st.warning(f"**This model is atypical here.** The lecture's figure shows a head that gives “{antecedent}” "
                   f"most of the weight of “it”; on {checkpoint.name} the most any head gives it is "
                   f"{percent(here[1])} ({here[0]}). See {other}.")
    else:
        st.info(f"**As in the lecture:** {here[0]} gives “{antecedent}” {percent(here[1])} of the weight of “it”. "
                f"Compare {other}.")
