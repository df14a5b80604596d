"""The Lesson page in AppTest: the landing page, its numbers as the trace's, the step list and buttons, the link
into a deep view on the same word, layer and head, and projector mode (kept in the URL, per session)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.capture.trace import trace_sentence
from tests.conftest import ROOT

SENTENCE = "The animal didn't cross the street because it was too tired."


def opened(**query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    at.session_state["sentence"] = SENTENCE
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def stated(at: AppTest) -> dict:
    """The numbers the open step states, by name (their full values, from the page's data-value attributes)."""
    html = next(m.value for m in at.markdown if "lesson-numbers" in m.value)
    return {name: json.loads(value.replace("&quot;", '"').replace("&#x27;", "'"))
            for name, value in re.findall(r'data-name="([^"]+)" data-value=\'([^\']*)\'', html)}


@pytest.mark.slow
def test_the_app_opens_on_the_lesson_and_its_numbers_are_the_traces(h8):
    at = opened(lesson="softmax", query="12", head="encoder.2.0")
    assert at.title[0].value.startswith("Lesson")
    assert at.subheader[0].value == "Step 6 of 17: Softmax: the attention weights"
    pattern = trace_sentence(h8, SENTENCE).pattern("encoder")[2, 0, 12]
    numbers = stated(at)
    assert numbers["key"] == "▁animal" == h8.pieces([trace_sentence(h8, SENTENCE).source_ids[int(np.argmax(pattern))]])[0]
    assert np.isclose(numbers["weight"], pattern.max(), atol=1e-6) and np.isclose(numbers["sum"], 1, atol=1e-6)

    at.button(key="lesson_next").click().run()
    assert at.subheader[0].value.startswith("Step 7 of 17") and at.query_params["lesson"] == "values"
    at.button(key="lesson_previous").click().run()
    at.button(key="lesson_previous").click().run()
    assert at.subheader[0].value.startswith("Step 5 of 17") and at.query_params["lesson"] == "scale"


@pytest.mark.slow
def test_see_it_in_depth_opens_the_deep_view_on_the_same_choice():
    at = opened(lesson="qkv", query="12", head="encoder.1.3")
    at.button(key="lesson_link").click().run()
    assert not at.exception and at.title[0].value == "Internals"
    assert at.session_state["internals_part"] == "Q, K, V walkthrough" and at.session_state["internals_query"] == 12
    assert (at.session_state["internals_kind"], at.session_state["internals_layer"],
            at.session_state["internals_head"]) == ("encoder", 1, 3)


@pytest.mark.slow
def test_every_deep_link_carries_the_word_layer_head_and_step_it_came_from():
    """The heads step's link opens Attention on the word the lesson follows ("it", not the page's own default),
    with the same head."""
    at = opened(lesson="heads", query="12", head="encoder.1.3")
    assert at.selectbox(key="lesson_word").format_func(12).endswith("▁it")
    at.button(key="lesson_link").click().run()
    assert not at.exception and at.title[0].value.startswith("Attention")
    assert at.query_params["word"] in ("it", ["it"]) and at.query_params["head"] in ("encoder.1.3", ["encoder.1.3"])
    assert at.selectbox(key="word_focus_word").value == "it"


def test_a_default_choice_is_not_published():
    """The lesson's own defaults (its word, layer, head, output step) stay out of the URL, so the pages that share
    query=, head= and step= open on their own defaults until the person chooses."""
    at = opened()
    assert not {"query", "head", "step"} & set(at.query_params)
    at.selectbox(key="lesson_head").select(5).run()
    assert at.query_params["head"] == "encoder.2.5"


def title_size(at: AppTest) -> int:
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    return chart["layout"]["title"]["font"]["size"]


def test_projector_mode_is_kept_in_the_url_and_stays_in_its_session():
    projector = opened(lesson="scores", projector="on")
    plain = opened(lesson="scores")
    assert projector.session_state["projector"] is True and projector.query_params["projector"] == "on"
    assert title_size(projector) == 18 and title_size(plain) == 14          # 14 px × 1.3
    assert "projector" not in plain.query_params
    projector.run()                      # a run after the other session's: still its own scale
    assert title_size(projector) == 18


@pytest.mark.slow
def test_a_head_a_model_cannot_take_comes_back_on_a_model_that_can():
    """h8 on layer 1, head 5 → the digit ViT (4 heads: its box clamps to head 3) → h8 again: the Lesson follows
    layer 1, head 5 again, as the URL kept it (issue 61)."""
    at = opened(lesson="softmax", query="12", head="encoder.1.5")
    assert (at.session_state["lesson_layer"], at.session_state["lesson_head"]) == (1, 5)
    models = at.selectbox(key="model").options
    vit = next(option for option in models if "digit" in option.lower())
    h8 = at.selectbox(key="model").value
    at.selectbox(key="model").set_value(vit).run()
    assert not at.exception and at.session_state["lesson_head"] < 4
    assert at.query_params["head"] == "encoder.1.5"                       # the clamp is not the person's choice
    at.selectbox(key="model").set_value(h8).run()
    assert not at.exception
    assert (at.session_state["lesson_layer"], at.session_state["lesson_head"]) == (1, 5)
    assert at.query_params["head"] == "encoder.1.5"


@pytest.mark.slow
def test_a_word_a_model_cannot_take_comes_back_on_a_model_that_can():
    """The word followed on h8, through the digit ViT (which has no words: its box and the URL fall back to its own
    default) and back: the Lesson follows the same word again, and the URL says so (issue 61)."""
    at = opened(lesson="softmax", query="3", head="encoder.1.5")   # "cross", not the default
    word = at.session_state["lesson_word"]
    assert word == 3 and at.query_params["query"] == "3"
    models = at.selectbox(key="model").options
    vit = next(option for option in models if "digit" in option.lower())
    h8 = at.selectbox(key="model").value
    at.selectbox(key="model").set_value(vit).run()
    assert not at.exception and at.query_params.get("query", "") != "3"      # the box and the URL agree there
    at.selectbox(key="model").set_value(h8).run()
    assert not at.exception
    assert at.session_state["lesson_word"] == 3 and at.query_params["query"] == "3"
