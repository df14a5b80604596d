"""A Heads page tab for each registered analysis (explorer/analyses/registry.py): its options as widgets kept in the
URL (`NAME-OPTION=`), its record for the current sentence, its figure (explorer/figures/registered.py) with the
numbers to download, and the command that runs it over a corpus. Nothing here names one analysis."""

from __future__ import annotations

import re

import streamlit as st

from explorer.analyses.registry import Analysis, Option
from explorer.figures.registered import figure_of
from explorer.pages.components import url_state
from explorer.pages.components.glossary_links import term_help
from explorer.pages.components.widgets import command_line, show_figure


def number_from_link(text: str, default: int | float) -> int | float:
    """A number option's value from the link's text, or its default where the text is not one (a hand-edited link)."""
    pattern = r"-?\d+" if isinstance(default, int) else r"-?\d+(\.\d*)?([eE][-+]?\d+)?"
    return type(default)(text) if re.fullmatch(pattern, text) else default


def option_widget(analysis: Analysis, option: Option):
    """The option's widget, its value kept in the URL while it differs from the default."""
    key, parameter = f"analysis_{analysis.name}_{option.name}", f"{analysis.name}-{option.name}".replace("_", "-")
    label = option.name.replace("_", " ")
    if isinstance(option.default, bool):
        encode = lambda value: "on" if value != option.default else ""      # noqa: E731
        url_state.kept(key, parameter, [False, True], encode, default=option.default)
        value = st.toggle(label, key=key, help=option.help)
    elif option.choices:
        encode = lambda value: "" if value == option.default else str(value)      # noqa: E731
        url_state.kept(key, parameter, list(option.choices), encode, default=option.default)
        value = st.selectbox(label, option.choices, key=key, help=option.help)
    else:
        encode = lambda value: "" if value == option.default else str(value)      # noqa: E731
        if key not in st.session_state:
            st.session_state[key] = number_from_link(url_state.saved(parameter), option.default)
        value = st.number_input(label, key=key, help=option.help)
    url_state.keep(parameter, value, encode)
    return value


def show_registered(analysis: Analysis, checkpoint, trace) -> None:
    st.header(analysis.title, help=term_help(*analysis.terms) if analysis.terms else None)
    st.caption(f"{analysis.help[:1].upper()}{analysis.help[1:]}.")
    command_line(f"`attention-explorer {analysis.name} --model MODEL --src FILE` gives the mean over a corpus "
                 f"(`--text \"…\"` one sentence; `--help` for its options).")
    if trace is None:
        st.info("Type a sentence in the sidebar: this analysis reads its trace.")
        return
    options = {option.name: option_widget(analysis, option) for option in analysis.options}
    record = analysis.run(checkpoint, trace, **options)
    show_figure(figure_of(record, f"{analysis.title} on your sentence"), f"analysis-{analysis.name}",
                record.table(), width="content")
