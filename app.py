"""Attention Explorer: type an English sentence, see how the bundled Transformer translates and attends.

Run with `bash scripts/start.sh` (or `streamlit run app.py`). The sidebar holds the model, the sentence and
the decoding choice; every page reads them, so one sentence flows through all views.
"""

import os

import streamlit as st
import torch

from views.common import render_sidebar

# One torch thread per computation. Streamlit runs every browser session in a thread of one process; with
# torch's default (a thread per core) two sessions, or one busy core, make every matrix product wait on the
# others: capturing one sentence with a core busy took 2.6–18 s with 2 threads and 0.06 s with 1.
torch.set_num_threads(int(os.environ.get("ATTENTION_EXPLORER_THREADS", "1")))

navigation = st.navigation([
    st.Page("views/translation.py", title="Translation", default=True),
    st.Page("views/attention.py", title="Attention"),
    st.Page("views/internals.py", title="Internals"),
    st.Page("views/decoding.py", title="Decoding"),
    st.Page("views/heads.py", title="Heads"),
    st.Page("views/compare.py", title="Compare 1/2/8 heads"),
    st.Page("views/prune.py", title="Prune"),
])
# No page icons: emoji show as empty boxes in a browser without an emoji font, and a Material icon on a page
# becomes that page's tab icon, which the browser fetches from Google's servers (offline: a failed request).
st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
render_sidebar()
navigation.run()
