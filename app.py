"""Attention Explorer: type an English sentence, see how the bundled Transformer translates and attends.

Run with `bash scripts/start.sh` (or `streamlit run app.py`). The sidebar holds the model, the sentence and
the decoding choice; every page reads them, so one sentence flows through all views.
"""

import streamlit as st

from pages.common import render_sidebar

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
navigation = st.navigation([
    st.Page("pages/translation.py", title="Translation", icon="🌐", default=True),
    st.Page("pages/attention.py", title="Attention", icon="🔥"),
    st.Page("pages/internals.py", title="Internals", icon="⚙️"),
    st.Page("pages/decoding.py", title="Decoding", icon="🪜"),
    st.Page("pages/heads.py", title="Heads", icon="🧭"),
    st.Page("pages/compare.py", title="Compare 1/2/8 heads", icon="⚖️"),
    st.Page("pages/prune.py", title="Prune", icon="✂️"),
])
render_sidebar()
navigation.run()
