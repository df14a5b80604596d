"""Streamlit AppTest of the explorer: no exception, and the numbers it shows are the explorer's own."""

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.trace import trace_sentence
from explorer.translation import translate
from tests.conftest import ROOT


@pytest.fixture
def app():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    return at


def test_translation_and_heatmap_match_the_explorer(app, h8):
    sentence = app.text_area(key="sentence").value
    assert app.text[0].value == translate(h8, [sentence])[0]
    figure = app.get("plotly_chart")[0]
    import json

    data = json.loads(figure.proto.spec)["data"][0]
    expected = trace_sentence(h8, sentence).pattern("encoder")[0, 0]
    np.testing.assert_allclose(np.array(data["z"], dtype=float), expected, atol=1e-6)


def test_a_new_sentence_and_head(app, h8):
    app.text_area(key="sentence").input("Two dogs play in the snow.").run()
    app.selectbox(key="layer").select(2).run()
    app.selectbox(key="head").select(5).run()
    assert not app.exception
    assert app.text[0].value == translate(h8, ["Two dogs play in the snow."])[0]


@pytest.mark.parametrize("text, message", [("   ", "Please type a sentence"), ("A dog. " * 800, "cut to the model's maximum")])
def test_bad_input_gives_a_message(app, text, message):
    app.text_area(key="sentence").input(text).run()
    assert not app.exception
    shown = [e.value for e in app.error] + [w.value for w in app.warning]
    assert any(message in value for value in shown)
