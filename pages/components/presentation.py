"""Presentation mode for a class: the Lesson driven from the keyboard and the projector's first screen.

- ← and → press the step's ◀ Previous and Next ▶ buttons (never while a box, a list or a slider has the keys; a
  toggle or checkbox does not take them, so the projector toggle that just folded the sidebar passes them on).
- A new step scrolls its title to the top of the screen, so that the class sees the new step, not the end of the
  old figure (only when the step changed: a new choice of word or head leaves the page where it is).
- Projector mode folds the sidebar when it is turned on, by the toggle or by a link (`projector=on`): the column
  gets the whole width of the screen. The sidebar opens again with its own arrow; it is not folded again until
  projector mode is turned off and on.
Each is a small script in the page (st.html), run once per change: the state that says when is this session's."""

from __future__ import annotations

import json

import streamlit as st

FOLDED = "_projector_folded"        # this session folded the sidebar for the projector mode now on
SHOWN_STEP = "_presented_step"      # the step the page last showed

STEP_KEYS = """<script>
if (!window.explorerStepKeys) {
  window.explorerStepKeys = true;
  document.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const label = {ArrowRight: 'Next ▶', ArrowLeft: '◀ Previous'}[event.key];
    const target = event.target;
    if (!label || (target && target.closest && target.closest(
        'input:not([type="checkbox"]), textarea, select, [contenteditable="true"], [role="slider"], ' +
        '[role="listbox"], [role="combobox"]'))) {
      return;
    }
    const button = [...document.querySelectorAll('[data-testid="stMain"] button')]
      .find((candidate) => candidate.innerText.trim() === label);
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  });
}
</script>"""

# The title's text is matched (its heading element is drawn after this script runs): tried for up to 5 s.
SCROLL_TO_TITLE = """<script>
(() => {
  const title = %s;
  let tries = 0;
  const scroll = () => {
    const heading = [...document.querySelectorAll('[data-testid="stMain"] h3')]
      .find((element) => element.innerText.startsWith(title));
    if (heading) heading.scrollIntoView({block: 'start'});
    else if (tries++ < 50) setTimeout(scroll, 100);
  };
  setTimeout(scroll, 50);
})();
</script>"""

FOLD_SIDEBAR = """<script>
(() => {
  let tries = 0;
  const fold = () => {
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
    if (sidebar && button && sidebar.dataset.collapsed !== 'true') button.click();
    else if (!sidebar || !button) { if (tries++ < 50) setTimeout(fold, 100); }
  };
  setTimeout(fold, 50);
})();
</script>"""


def step_keys() -> None:
    """← and → move between the steps of the page's ◀ Previous and Next ▶ buttons."""
    st.html(STEP_KEYS, unsafe_allow_javascript=True)


def scroll_to_new_step(title: str) -> None:
    """Bring the step's title (its heading's start, e.g. "Step 8 of 16") to the top when the step changed."""
    if st.session_state.get(SHOWN_STEP) != title:
        if SHOWN_STEP in st.session_state:          # not on the page's first run: the reader is where they were
            st.html(SCROLL_TO_TITLE % json.dumps(title), unsafe_allow_javascript=True)
        st.session_state[SHOWN_STEP] = title


def fold_sidebar_for_projector(projector: bool) -> None:
    """Fold the sidebar once each time projector mode is turned on, however it was turned on."""
    if projector and not st.session_state.get(FOLDED):
        st.sidebar.html(FOLD_SIDEBAR, unsafe_allow_javascript=True)
    st.session_state[FOLDED] = projector
