"""Glossary: every term the pages use, in plain words (explorer/teaching/glossary.py), each under its own anchor
(`glossary#nats`), with a search box. A page's link (`glossary?term=nats`, pages/components/glossary_links.py) opens it in a new
tab with that entry first."""



import streamlit as st

from explorer.pages.components.glossary_links import PARAMETER
from explorer.teaching.glossary import GLOSSARY, matching, slug

BY_SLUG = {slug(term): term for term in GLOSSARY}


def related_links(term: str) -> str:
    """The entry's related terms as links within this page."""
    return ", ".join(f"[{other}](#{slug(other)})" for other in GLOSSARY[term].related)


def show(term: str, anchored: bool = True) -> None:
    """One entry: the term as a heading (with its anchor), then one block of text: its definition, and in small grey
    type where to read more and the related terms. (A caption of their own, one more element for each of 85 terms,
    cost the browser time on every visit to this page.)"""
    definition, see, related = GLOSSARY[term]
    if anchored:
        st.subheader(term, anchor=slug(term))
    else:
        st.markdown(f"**{term}**")
    notes = ([f"See: {see}"] if see else []) + ([f"Related: {related_links(term)}"] if related else [])
    st.markdown(definition + (f"\n\n:small[:gray[{' · '.join(notes)}]]" if notes else ""))


st.title("Glossary")
st.caption("Every term the explorer's pages use, in plain words, with where to read more: type in the box to find "
           "one, or follow a page's link to land on its entry.")

wanted = BY_SLUG.get(st.query_params.get(PARAMETER, ""))
if wanted:          # came from a page's link: the entry first, in full view
    with st.container(border=True):
        show(wanted, anchored=False)

query = st.text_input("Search the glossary", key="glossary_search", placeholder="a word, e.g. mask, softmax, Voita",
                      help="Shows the terms whose name, definition or reference contains every word typed.")
terms = matching(query)
if query.strip():
    st.caption(f"{len(terms)} of {len(GLOSSARY)} terms match “{query.strip()}”.")
if not terms:
    st.info("No term matches: try one word, or part of one.")
for term in terms:
    show(term)
