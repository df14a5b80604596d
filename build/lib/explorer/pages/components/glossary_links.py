"""The pages' one way to explain a term where it appears, from the one glossary (explorer/teaching/glossary.py):
`help=term_help("nats")` on the widget or heading that shows it, or `linked("nats")` in a caption, a markdown link
to the term's entry on the Glossary page (Streamlit opens it in a new tab: the student keeps their place).
An unknown term is a KeyError the moment the page runs (and tests/app/test_glossary.py checks every call)."""

from __future__ import annotations

from urllib.parse import quote

import streamlit as st

from explorer.pages.registry import page as registered
from explorer.teaching.glossary import entry, slug

PAGE = registered("glossary").url_path      # the Glossary page's URL path (pages/registry.py)
PARAMETER = "term"      # glossary?term=<slug>: the page opens with that entry first


def link(term: str) -> str:
    """The address of the term's entry: relative, so it works under any base path. A new tab starts a new session,
    whose first run rewrites the URL and drops a #fragment: the entry is named in the query string too, beside a
    shared server's access token when this session has it (pages/components/access.py), so the new tab opens."""
    entry(term)
    token = st.query_params.get("token")
    return f"{PAGE}?{PARAMETER}={slug(term)}" + (f"&token={quote(token)}" if token else "") + f"#{slug(term)}"


def linked(term: str, text: str | None = None) -> str:
    """Markdown `[text](glossary?term=slug#slug)`; text: the words shown (the term itself by default)."""
    return f"[{text or term}]({link(term)})"


def term_help(*terms: str) -> str:
    """A tooltip's text (markdown): one term's definition, or several terms' each under its name in bold; each with
    a link to its glossary entry."""
    if len(terms) == 1:
        return f"{entry(terms[0]).definition} ({linked(terms[0], 'glossary')})"
    return "\n\n".join(f"**{term}**: {entry(term).definition} ({linked(term, 'glossary')})" for term in terms)
