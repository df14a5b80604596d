"""Attention Explorer: type an English sentence, see how the bundled Transformer translates and attends.

Run with `bash scripts/start.sh` (or `streamlit run pages/app.py`). The sidebar holds the model, the sentence and
the decoding choice; every page reads them, so one sentence flows through all views.

The entry lives inside pages/ with the page scripts: Streamlit would run `<entry's folder>/pages/*.py` on its own,
without this entry, when a page's URL is the first request; here that folder does not exist.
"""

import os
from contextlib import nullcontext
from pathlib import Path

import streamlit as st
import torch

from explorer.pages.components.access import ask_token, granted, policy
from explorer.pages.components.caches import warm_up_models
from explorer.pages.components.errors import errors_as_messages
from explorer.pages.components.run_queue import RUNS, queued_message
from explorer.pages.components.sidebar import render_sidebar
from explorer.pages.registry import groups

# One torch thread per computation. Streamlit runs every browser session in a thread of one process; with
# torch's default (a thread per core) two sessions, or one busy core, make every matrix product wait on the
# others: capturing one sentence with a core busy took 2.6–18 s with 2 threads and 0.06 s with 1.
torch.set_num_threads(int(os.environ.get("ATTENTION_EXPLORER_THREADS", "1")))

# The page config comes first, with a local favicon: otherwise the navigation makes the current page's Material
# icon the tab's icon, which the browser would fetch from Google's servers (offline, a failed request). The
# navigation's icons themselves are drawn with the Material Symbols font that ships inside Streamlit; emoji
# would show as empty boxes in a browser without an emoji font.
# A link in projector mode (a class's view) opens with the sidebar folded: the figures get the projector's width.
st.set_page_config(page_title="Attention Explorer", page_icon=str(Path(__file__).parent / "favicon.png"),
                   layout="wide",
                   initial_sidebar_state="collapsed" if st.query_params.get("projector") == "on" else "auto")
# A shared server started with a token (pages/launch.py) shows nothing, not even the pages' names, without it.
allowed = granted()
# Every page, its group, title and icon come from pages/registry.py: the tests and scripts read the same list.
navigation = st.navigation({
    group: [st.Page(page.file, title=page.title, icon=page.material_icon, default=page.default) for page in pages]
    for group, pages in groups().items()
}, position="sidebar" if allowed else "hidden", expanded=True)     # every page's name, none behind "View more"
if not allowed:
    ask_token()
    st.stop()


# After a lost connection comes back (a server restart), Streamlit's page reconnects to a new session but runs
# nothing until the next click, which then loses the view (a page change clears the URL; a widget's change is
# overridden by it). Reloading the tab the moment it reconnects opens the view its URL holds, token included.
# The sign is the sentence box: Streamlit disables every widget while disconnected, and we never disable this one.
#
# Enter in the sentence box applies the sentence: the box is left (blur), which commits its text to Streamlit as
# Ctrl+Enter does; Shift+Enter is left alone. A student expects Enter to work, and a hint shown only while typing
# (Streamlit's own) was missed.
BROWSER_SCRIPT = """<script>
if (!window.explorerAppliesOnEnter) {
  window.explorerAppliesOnEnter = true;
  document.addEventListener('keydown', (event) => {
    const box = event.target;
    if (event.key === 'Enter' && !event.shiftKey && !event.ctrlKey && !event.metaKey && box.matches
        && box.matches('textarea[aria-label="English sentence"]')) {
      event.preventDefault();
      event.stopPropagation();
      box.blur();
    }
  }, true);
}
if (!window.explorerReloadsOnReconnect) {
  window.explorerReloadsOnReconnect = true;
  let lost = false;
  setInterval(() => {
    const box = document.querySelector('textarea[aria-label="English sentence"]');
    if (box && box.disabled) lost = true;
    else if (box && lost) location.reload();
  }, 500);
}
</script>"""

# A served explorer (a class) runs no more pages at once than the cores (pages/components/run_queue.py): a run that
# must wait says so, with its place and an estimate, until its turn; the notice goes once the run starts. On one's
# own machine a person's few tabs run as they come.
warm_up_models()                # a served explorer loads its models for the class in the background
notices = []                    # drawn only when this run must wait: a free server adds nothing to the page
with (RUNS.turn(lambda ahead, seconds: notices.append(st.info(queued_message(ahead, seconds),
                                                              icon=":material/hourglass_top:")))
      if policy().serving else nullcontext()):
    for notice in notices:
        notice.empty()
    render_sidebar()
    st.sidebar.html(BROWSER_SCRIPT, unsafe_allow_javascript=True)
    with errors_as_messages():     # the pages' one catch of what a person can cause (pages/components/errors.py)
        navigation.run()
