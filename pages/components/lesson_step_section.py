"""The Lesson's open step: its title, paragraph, numbers and figure, where this model differs from the paper, the
lecture's note on the lecture's sentence, its glossary terms, the link to the page that shows it in full, and the
◀ Previous / Next ▶ buttons (which the ← and → keys press: pages/components/presentation.py)."""

from __future__ import annotations

import streamlit as st

from explorer.figures.lesson import chips_html, numbers_html
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import linked
from explorer.pages.components.lesson_lecture_note import lecture_note
from explorer.pages.components.widgets import show_figure
from explorer.teaching.lesson_steps import STEP_TERMS, Step


def show_step(shown: Step, slug: str, number: int, count: int, checkpoint, sentence: str | None, move,
              projector: bool = False) -> None:
    """sentence: the text the lecture's note checks (None for an image); move(by) changes the open step.
    projector: the class's first screen holds the title and the figure, as a slide does (the teacher speaks to it);
    the paragraph and the numbers follow the figure and the buttons are below the step only (the arrow keys move)."""
    st.subheader(f"Step {number + 1} of {count}: {shown.title}")
    # Under the title, where a new step's scroll leaves the screen's top (and in a 1400 × 900 first screen); again
    # under the step for a reader who scrolled down through it.
    if not projector:
        step_buttons(number, count, move, "")
        explanation(shown)
    if shown.figure is not None:
        show_figure(shown.figure, f"lesson-{slug}")
    elif shown.tokens is not None:
        st.markdown(chips_html(shown.tokens, shown.marked), unsafe_allow_html=True)
    if projector:
        explanation(shown)
    if shown.differs:
        st.info(f"**Unlike the paper:** {shown.differs}")
    if sentence is not None:
        lecture_note(checkpoint, sentence, slug)
    st.caption("In the glossary: " + " · ".join(linked(term) for term in STEP_TERMS[slug]))

    if shown.link is not None and st.button(f"See it in depth: {shown.link.title} →", key="lesson_link",
                                           width="stretch",
                                           help="Opens that page on the same sentence, word, layer and head."):
        url_state.follow(shown.link.parameters)
        st.switch_page(shown.link.page)
    step_buttons(number, count, move, "_end")


def explanation(shown: Step) -> None:
    """The step's paragraph and its numbers."""
    st.markdown(shown.text)
    st.markdown(numbers_html(shown.numbers), unsafe_allow_html=True)


def step_buttons(number: int, count: int, move, where: str) -> None:
    """◀ Previous and Next ▶ side by side (keys lesson_previous / lesson_next, with `where` after them)."""
    previous_column, next_column = st.columns(2)
    previous_column.button("◀ Previous", key=f"lesson_previous{where}", on_click=move, args=(-1,),
                           disabled=number == 0, width="stretch")
    next_column.button("Next ▶", key=f"lesson_next{where}", on_click=move, args=(1,), disabled=number == count - 1,
                       width="stretch")
