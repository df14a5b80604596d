"""all-MiniLM-L6-v2, the real pretrained encoder, in the app: offered in the sidebar with what it is, opened by a
deep link, every page drawn on it (a page that does not apply says so), and the lecture's question answered on it
beside the bundled model, on the Attention page and in the Lesson, with the numbers recomputed here."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explorer.analyses.sentence.word_focus import LECTURE, lecture_strongest, percent
from explorer.models.installed import INSTALLED
from explorer.pages.components.session import INSTALLED_MODELS
from explorer.pages.registry import PAGES
from tests.conftest import ROOT

NAME = "all-MiniLM-L6-v2"
LABEL = next(label for label, name in INSTALLED_MODELS.items() if name == NAME)
SENTENCE = LECTURE[0][0]


def opened(page: str | None = None, state: dict | None = None, **query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=300)
    at.session_state["sentence"] = SENTENCE
    for key, value in (state or {}).items():
        at.session_state[key] = value
    for name, value in query.items():
        at.query_params[name] = value
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_sidebar_offers_it_by_name_and_a_link_opens_it():
    at = opened(model=NAME)                                 # ?model=all-MiniLM-L6-v2
    assert at.sidebar.selectbox(key="model").value == LABEL and LABEL in at.sidebar.selectbox(key="model").options
    assert any(INSTALLED[NAME].summary == caption.value for caption in at.sidebar.caption)
    assert at.query_params["model"] == [NAME] or at.query_params["model"] == NAME


@pytest.mark.slow
@pytest.mark.parametrize("page", [page.file for page in PAGES if page.reads != "image"])
def test_every_page_draws_it_or_says_why_not(page):
    at = opened(page, {"model": LABEL})
    assert not at.error, [e.value for e in at.error]
    said = " ".join(element.value for element in [*at.info, *at.caption, *at.markdown])
    if page == "decoding.py":       # nothing to decode: one sentence says so, and where the output is
        assert "Decoding, beam search and the" in said and "do not apply to it" in said
    elif page == "prune.py":        # a row of 12 heads for each of its 6 layers
        assert [len(row.options) for row in at.main.pills] == [12] * 6
    elif page == "lesson.py":       # the first step: the sentence as the model's pieces
        assert at.subheader[0].value.startswith("Step 1 of") and "animal" in said
    elif page not in ("glossary.py", "papers.py"):
        # every head's pattern as tiles, or a padding mask (Internals' first tab): HTML figures
        figures = [block for block in at.get("html") if 'class="tile"' in block.proto.body
                   or 'class="padding-mask"' in block.proto.body]
        assert at.get("plotly_chart") or at.dataframe or figures, page


def test_the_attention_page_answers_on_both_models_with_their_numbers(h8):
    from explorer.models.loader import open_model

    minilm = open_model(NAME)
    at = opened("attention.py", {"model": LABEL})
    said = [info.value for info in at.info]
    head, weight = lecture_strongest(minilm, SENTENCE)
    assert any(f"{head} ({percent(weight)})" in text for text in said)          # enc.3.1 (68%) on MiniLM itself
    beside = next(text for text in said if text.startswith("**On the model “8 heads (en-de-h8)”**"))
    h8_head, h8_weight = lecture_strongest(h8, SENTENCE)
    assert f"the most any gives it is {percent(h8_weight)} ({h8_head}" in beside or f"{h8_head} ({percent(h8_weight)})" in beside
    assert "model=h8" in beside                              # a link to the same question on the bundled model


def test_the_lesson_says_the_bundled_head_is_atypical_and_links_to_minilm(h8):
    at = opened("lesson.py", lesson="heads")
    warning = next(w.value for w in at.warning if "atypical" in w.value)
    h8_head, h8_weight = lecture_strongest(h8, SENTENCE)
    assert f"the most any head gives it is {percent(h8_weight)} ({h8_head})" in warning
    assert f"model={NAME}" in warning and "lesson=heads" in warning
    at = opened("lesson.py", {"model": LABEL}, lesson="heads")
    assert any(info.value.startswith("**As in the lecture:**") for info in at.info)
