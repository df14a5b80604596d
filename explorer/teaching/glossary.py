"""The explorer's glossary: every term a page uses, in plain words for a student fresh from a lecture on "Attention
Is All You Need" (Vaswani et al. 2017). One source of truth: the Glossary page lists it, and the pages' tooltips
and links (pages/components/glossary_links.py) read their definitions from here; the terms themselves are in
explorer/teaching/glossary_terms.py, and each registered analysis's beside it. No streamlit.

    from explorer.teaching.glossary import GLOSSARY, slug
    GLOSSARY["nats"].definition, slug("gradient × input")    # → "…", "gradient-x-input"
"""

from __future__ import annotations

import re
import unicodedata

from explorer.analyses.registry import registered
from explorer.teaching.glossary_terms import TERMS, Entry

# Spelled out before the slug's general rule: symbols a student types as words.
SYMBOLS = {"×": " x ", "ρ": " rho ", "α": " alpha ", "→": " to ", "–": " ", "—": " ", "‖": " ", "·": " "}


def slug(term: str) -> str:
    """The term's anchor on the Glossary page (`glossary#slug`): lower case ASCII words joined by hyphens."""
    text = "".join(SYMBOLS.get(character, character) for character in term)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _sorted(entries: dict[str, Entry]) -> dict[str, Entry]:
    return dict(sorted(entries.items(), key=lambda item: slug(item[0])))


def analysis_terms() -> dict[str, Entry]:
    """The terms each registered analysis defines (explorer/analyses/registry.py), pointing at its Heads page tab."""
    return {term: Entry(definition, f"Heads page, {analysis.title}")
            for analysis in registered().values() for term, definition in analysis.terms.items()}


GLOSSARY: dict[str, Entry] = _sorted({**analysis_terms(), **TERMS})


def entry(term: str) -> Entry:
    """The term's entry; a KeyError that names the term when the glossary lacks it."""
    try:
        return GLOSSARY[term]
    except KeyError:
        raise KeyError(f"{term!r} is not in the glossary (explorer/teaching/glossary_terms.py)") from None


def matching(query: str) -> list[str]:
    """The terms whose name, definition or reference contains every word of query (any case); all of them for an
    empty query."""
    words = query.lower().split()
    # and as a student may spell them: "encoder-decoder" for "encoder–decoder", "Add & norm" for "Add & Norm"
    spelled = slug(query).split("-") if slug(query) else []
    found = []
    for term, (definition, see, _) in GLOSSARY.items():
        text = f"{term} {slug(term)} {definition} {see}"
        words_of = slug(text).replace("-", " ")
        if all(word in text.lower() for word in words) or spelled and all(word in words_of for word in spelled):
            found.append(term)
    return found
