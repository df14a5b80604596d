"""The Heads page says which role thresholds are Voita et al.'s and which this project's own (issue 47): each box's
help names its source, and the caption under them says it in a sentence."""

from __future__ import annotations

from explorer.analyses.defaults import THRESHOLD_SOURCES
from tests.app.conftest import open_page


def test_each_threshold_names_where_it_comes_from(h8):
    at = open_page("heads.py", "Two dogs play in the snow.")
    for name, source in THRESHOLD_SOURCES.items():
        box = at.number_input(key=f"threshold_{name}")
        assert box.help == source
    caption = " ".join(c.value for c in at.caption if c.value.startswith("Thresholds:"))
    assert "Positional and syntactic margin are Voita et al. 2019's; the others are this project's own." in caption
