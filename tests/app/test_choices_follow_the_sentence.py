"""A choice of a token follows its token (pages/components/url_state.follow_token): a student who picks a word and
then types another sentence, half-way through, still follows that word where it is, and a stated default where it
is not; the picker's label and the step's text name the same piece."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

FIRST = "A man is riding a bicycle down the street."
SECOND = "On the street a woman in a red dress is riding a horse."
THIRD = "Two dogs play in the snow."


def lesson(sentence: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    at.session_state["sentence"] = sentence
    at.query_params["lesson"] = "qkv"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def chosen_piece(at: AppTest, key: str) -> str:
    box = at.selectbox(key=key)
    return box.format_func(box.value).split(": ", 1)[1]


def retyped(at: AppTest, sentence: str) -> AppTest:
    at.session_state["sentence"] = sentence
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_the_lessons_word_follows_it_into_a_new_sentence_and_falls_back_where_it_is_gone(h8):
    at = lesson(FIRST)
    words = at.selectbox(key="lesson_word").options
    riding = next(i for i, option in enumerate(words) if option.endswith("▁riding"))
    at.selectbox(key="lesson_word").set_value(riding).run()
    assert chosen_piece(at, "lesson_word") == "▁riding"
    at = retyped(at, SECOND)                   # "riding" is still there, at another position
    assert chosen_piece(at, "lesson_word") == "▁riding" and at.selectbox(key="lesson_word").value != riding
    assert "▁riding" in " ".join(m.value for m in at.markdown)      # the step's text follows the same piece
    at = retyped(at, THIRD)                    # gone: the page's default, which the picker names
    assert chosen_piece(at, "lesson_word") != "▁riding"
    default = at.selectbox(key="lesson_word").value
    assert at.query_params.get("query") in (None, [], str(default), [str(default)])


@pytest.mark.slow
def test_a_choice_made_on_the_same_sentence_is_the_persons_own(h8):
    at = lesson(FIRST)
    at.selectbox(key="lesson_word").set_value(2).run()
    at.selectbox(key="lesson_word").set_value(5).run()        # the person moves on: no following back to 2
    assert at.selectbox(key="lesson_word").value == 5
    street = chosen_piece(at, "lesson_word")
    at = retyped(at, FIRST.replace("bicycle", "small red bicycle"))     # two words earlier: the piece moves on
    assert chosen_piece(at, "lesson_word") == street and at.selectbox(key="lesson_word").value == 7


@pytest.mark.slow
def test_switching_to_the_image_model_and_back_keeps_the_persons_sentence(h8):
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    at.run()
    at.sidebar.text_area(key="sentence").input(SECOND).run()
    at.sidebar.selectbox(key="model").set_value("Digits ViT (digits-vit)").run()
    assert not at.exception and not at.sidebar.text_area           # no sentence box for a model of images
    at.sidebar.selectbox(key="model").set_value("8 heads (en-de-h8)").run()
    assert not at.exception and at.sidebar.text_area(key="sentence").value == SECOND


@pytest.mark.slow
def test_the_decoding_step_follows_its_piece_when_pruning_changes_the_output(h8):
    """Pruning cross.0.* makes h8 write "▁eine m" for "▁dem": "▁Fahrrad" moves from step 5 to 6, "▁dem" is gone."""
    from explorer.capture.head_sets import head_set, parse_heads
    from explorer.capture.trace import trace_sentence
    from tests.app.conftest import open_page

    whole = trace_sentence(h8, FIRST).output_tokens
    pruned = trace_sentence(h8, FIRST, pruned=head_set(parse_heads("cross.0.*", h8))).output_tokens
    assert (whole.index("▁Fahrrad"), pruned.index("▁Fahrrad")) == (5, 6) and "▁dem" not in pruned   # the premise

    def titles(at: AppTest) -> str:          # the step's figures: HTML (its candidates, where it looked)
        return " ".join(block.proto.body for block in at.get("html"))

    at = open_page("decoding.py", FIRST)
    at.slider(key="decoding_step").set_value(5).run()
    at.session_state["url_pruned"] = "cross.0.*"          # pruned on the Prune page, half-way through
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="decoding_step").value == 6 and "step 6: where it looked" in titles(at)
    at.session_state["url_pruned"] = ""
    at.run()
    assert at.slider(key="decoding_step").value == 5                # and back with the whole model
    at.slider(key="decoding_step").set_value(4).run()              # "▁dem"
    at.session_state["url_pruned"] = "cross.0.*"
    at.run()
    assert at.slider(key="decoding_step").value == 0                # gone: the page's stated default, step 0
    assert at.query_params.get("step") in (None, [], "", [""], "0", ["0"])
