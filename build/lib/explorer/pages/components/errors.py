"""The pages' one catch of the errors a person can cause (models/errors.py: ExplorerError): the page script runs
inside `errors_as_messages()` (pages/app.py), so a bad sentence, file, head list or model folder becomes one
message under what the page drew so far. Anything else is a bug, and Streamlit shows its traceback."""

from __future__ import annotations

from contextlib import contextmanager

import streamlit as st

from explorer.models.errors import ExplorerError


@contextmanager
def errors_as_messages():
    try:
        yield
    except ExplorerError as error:
        st.error(str(error), icon=":material/error:")
