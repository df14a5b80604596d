"""Projector mode prints the attention weights in the heatmap's cells (a class cannot hover): a short sentence's
whole heatmap, and a long sentence's focus window (16 tokens a side at the folded column's width), never the
overview of the whole pattern; off the projector the cells are colour alone."""

from __future__ import annotations

import json

from tests.app.conftest import open_page
from tests.app.test_pages import traces_of

SHORT = "Two dogs play in the snow."
LONG = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
        "old man sits on a bench.")


def heatmap(at) -> dict:
    return traces_of(json.loads(at.get("plotly_chart")[0].proto.spec))[0]


def test_the_cells_print_their_weights_at_a_projector_for_a_short_sentence():
    assert heatmap(open_page("attention.py", SHORT, projector=True)).get("texttemplate") == "%{z:.2f}"
    assert not heatmap(open_page("attention.py", SHORT)).get("texttemplate")
    long = open_page("attention.py", LONG, projector=True)
    window = heatmap(long)
    assert window.get("texttemplate") == "%{z:.2f}" and len(window["x"]) <= 20
    assert [block for block in long.get("html") if 'class="whole-pattern"' in block.proto.body]     # an image beside it
    assert not heatmap(open_page("attention.py", LONG)).get("texttemplate")
