"""The view in the address bar and in the session: model, sentence, decoding, pruned heads and the pages' own
choices (the head looked at, the focus token, the open tab, the colour scale) live in the URL's query string and
in st.session_state, so a reload, a link (`?model=h2&sentence=…&beam=5&head=cross.2.5`) or a trip through the
other pages brings back exactly this view.

Streamlit forgets a widget's state once a page without it has run, so every kept choice is also stored under
VIEW (a plain session entry, never forgotten) and given back to its widget when the page opens again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from explorer.pages.components.access import quoted, refuse

RESTORED = "_url_restored"
VIEW = "_view"           # URL parameter → value (text), for the pages' own choices
BOUND = "_bound"         # URL parameter → the widget keys that show it (so a link to a page can reset them)
AS_TYPED = "as-typed"    # ?casing=as-typed: the sentence is fed to the model as typed, not recased
SIDEBAR_PARAMETERS = ("model", "sentence", "beam", "casing", "lang", "pruned")


def one_line(text: str) -> str:
    """The sentence as one line: Enter in the box, or a pasted paragraph, must not put newlines into it."""
    return " ".join(text.split()) if "\n" in text or "\r" in text else text


def restore(links: dict[str, str], own: str | None, max_chars: int) -> None:
    """Put the URL's view into the session state, the first time this session runs. links: each offered
    model's label → its name in `?model=`; own: the free-text folder choice, None when the server must not open
    a folder a link names (a served explorer: it says so and opens the default model)."""
    state = st.session_state
    if state.get(RESTORED):
        return
    state[RESTORED] = True
    query = st.query_params
    if "model" in query:
        by_link = {link: label for label, link in links.items()}
        if query["model"] in by_link:
            state["model"] = by_link[query["model"]]
        elif own is not None:
            state["model"], state["own_model"] = own, query["model"]
        else:
            refuse(f"This server offers only its own models, not {quoted(query['model'])}: showing the default "
                   "model.", f"model {quoted(query['model'])}")
            del st.query_params["model"]
    if query.get("sentence"):
        state["sentence"] = one_line(query["sentence"][:max_chars])
    beam = query.get("beam", "")
    if beam.isdigit() and int(beam) > 1:
        state["decoding"], state["beam_size"] = "beam search", min(10, int(beam))
    if query.get("pruned"):
        state["url_pruned"] = query["pruned"]
    if query.get("casing") == AS_TYPED:
        state["fix_casing"] = False
    if query.get("lang"):
        state["target_language"] = query["lang"]       # checked against the model's languages by the sidebar
    state[VIEW] = {name: query[name] for name in query if name not in SIDEBAR_PARAMETERS}


def kept(key: str, parameter: str | None, options, encode: Callable[[Any], str] = str, default: Any = None,
         tokens: Sequence[str] | None = None) -> None:
    """Before a page draws the widget `key`: give it back the value kept under `parameter` (from this session's
    last visit, or from the link), when that value is one of `options`; else `default` (when given) if the
    widget holds nothing valid. After drawing it, call keep().
    tokens: for a picker of positions, each position's token: the choice follows its token (follow_token)."""
    state = st.session_state
    if parameter:
        bind(parameter, key)
    if tokens is not None and follow_token(key, list(options), list(tokens), default) and parameter:
        # the link says what the picker now shows: the same token's new position, or no choice (the default)
        keep(parameter, state[key] if key in state and state[key] != default else "", encode)
    if key in state and state[key] in options:
        remember_token(key, tokens)
        return
    by_text = {encode(option): option for option in options}
    if parameter and saved(parameter) in by_text:
        state[key] = by_text[saved(parameter)]
    elif default is not None:
        state[key] = default
    else:
        valid(key, options)
    remember_token(key, tokens)


def bare(token: str) -> str:
    """A token as a word view and a piece view both name it: without SentencePiece's ▁ or WordPiece's ##."""
    return token.removeprefix("▁").removeprefix("##")


def follow_token(key: str, options: list, tokens: list[str], default: Any) -> bool:
    """A position picker's choice is a token, not a number: when the tokens changed since the choice (another
    sentence, model or units), it moves to the same token's nearest occurrence, else to `default` (a stated one:
    the page's own), so that the label and the figure never name two different tokens. A token the new tokens lack
    (a digit model has no words) is remembered, and comes back on tokens that have it, unless the person chose
    another meanwhile. Whether the tokens changed."""
    state = st.session_state
    memory, wanted_key = state.get(f"_{key}_token"), f"_{key}_wanted"
    if memory is None or memory[0] == tokens:
        if memory is not None and state.get(key) != memory[2]:
            state.pop(wanted_key, None)         # the person's own new choice: the old one is not wanted back
        return False                            # a first visit, or the person's own new choice: kept as it is
    wanted = state.get(wanted_key)
    for token, position in [*([wanted] if wanted else []), memory[1:]]:
        same = [option for option in options if bare(tokens[option]) == bare(token)]
        if same:
            state[key] = min(same, key=lambda option: abs(option - position))
            state.pop(wanted_key, None)
            return True
    state.setdefault(wanted_key, tuple(memory[1:]))
    if default is not None:
        state[key] = default
    else:
        state.pop(key, None)
    return True


def remember_token(key: str, tokens: Sequence[str] | None) -> None:
    """What the picker `key` shows now: (the tokens, the chosen token, its position), for follow_token."""
    state = st.session_state
    chosen = state.get(key)
    if tokens is not None and isinstance(chosen, int) and 0 <= chosen < len(tokens):
        state[f"_{key}_token"] = (list(tokens), tokens[chosen], chosen)


def kept_text(key: str, parameter: str) -> None:
    """kept() for a text box: any text."""
    if key not in st.session_state and saved(parameter):
        st.session_state[key] = saved(parameter)


def kept_list(key: str, parameter: str, options: list, separator: str = "|") -> None:
    """kept() for a multiselect: the kept choices that are still options."""
    if key not in st.session_state and saved(parameter):
        st.session_state[key] = [choice for choice in saved(parameter).split(separator) if choice in options]


def bind(parameter: str, *keys: str) -> None:
    """Record that these widgets show `parameter`, so follow() can make them read a new value."""
    st.session_state.setdefault(BOUND, {}).setdefault(parameter, set()).update(keys)


def follow(parameters: dict[str, str]) -> None:
    """Before switching to another page on a link (the Lesson's "see it in depth"): keep these choices in the view
    and forget the widgets that show them, so the page opens on exactly these, whatever it showed before."""
    view = st.session_state.setdefault(VIEW, {})
    for parameter, value in parameters.items():
        view[parameter] = value
        for key in st.session_state.get(BOUND, {}).get(parameter, ()):
            st.session_state.pop(key, None)
            st.session_state.pop(f"_{key}_token", None)     # the link's choice, not the token followed before


def saved(parameter: str) -> str:
    """The text kept for a page choice ("" when none)."""
    return st.session_state.get(VIEW, {}).get(parameter, "")


def valid(key: str, options) -> None:
    """Drop a widget's state that is no longer one of its options (another model, another sentence), so the
    widget starts from its default instead of failing."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def keep(parameter: str, value: Any, encode: Callable[[Any], str] = str) -> None:
    """Remember a page's choice for the next visit and put it in the URL (an empty one is left out)."""
    text = encode(value)
    view = st.session_state.setdefault(VIEW, {})
    if not text:
        view.pop(parameter, None)
        if parameter in st.query_params:
            del st.query_params[parameter]
    else:
        view[parameter] = text
        if st.query_params.get(parameter) != text:
            st.query_params[parameter] = text


def address(page: str, **parameters: str) -> str:
    """A link to a page of the app with these parameters (`attention?model=all-MiniLM-L6-v2&sentence=…`)."""
    return f"{page}?{urlencode(parameters)}"


def publish(model: str, sentence: str, beam_size: int, fix_casing: bool = True, target_language: str = "") -> None:
    """Write the current view into the URL (only what differs, so the address stays short): the sidebar's
    choices, the pruned heads and every page choice kept so far, whichever page is open."""
    wanted = {"model": model, "sentence": sentence, "beam": str(beam_size) if beam_size > 1 else None,
              "casing": None if fix_casing else AS_TYPED, "lang": target_language or None,
              "pruned": st.session_state.get("url_pruned") or None}
    wanted.update(st.session_state.get(VIEW, {}))
    for key, value in wanted.items():
        if value is None:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value
