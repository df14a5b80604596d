"""AppTest of the Patching page and the Heads page's head-detector section: what they draw is the explorer's own
numbers, the corrupted sentence is pre-filled and kept in the URL, bad input gets a message, and a tiny Hugging Face
model's pages run too."""

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.detectors import detect_heads
from explorer.patching import patch, suggest_corruption
from pages.session import OWN
from tests.app.test_pages import chart_titled
from tests.conftest import ROOT
from tests.hugging_face_models import SENTENCE as TINY_SENTENCE, saved_model

SENTENCE = "Two dogs play in the snow."


def opened(page: str, sentence: str, query: dict | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    at.session_state["sentence"] = sentence
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_patching_page_draws_the_explorers_numbers(h8):
    at = opened("patching.py", SENTENCE)
    corrupt = suggest_corruption(h8, SENTENCE)
    assert at.text_input(key="patching_corrupt").value == corrupt
    expected = patch(h8, SENTENCE, corrupt, fix_casing=True)
    assert expected.all_layers == pytest.approx(1.0, abs=1e-4) and expected.nothing == pytest.approx(0.0, abs=1e-4)
    assert [metric.value for metric in at.metric] == ["100.0%", "0.0%"]
    texts = [text.value for text in at.text]
    assert f"→ {expected.clean_output}" in texts and f"→ {expected.corrupt_output}" in texts
    panels = chart_titled(at, "log-probability restored")
    for panel, kind in zip(panels, h8.kinds):
        np.testing.assert_allclose(np.array(panel["z"], dtype=float), expected.heads[kind], atol=1e-6)
    outputs = np.array(panels[-1]["z"], dtype=float)
    np.testing.assert_allclose(outputs[:, 0], expected.layer_outputs["encoder"], atol=1e-6)
    np.testing.assert_allclose(outputs[:, 1], expected.layer_outputs["decoder"], atol=1e-6)
    assert at.query_params["corrupt"] == corrupt
    assert any("Meng et al. 2022" in caption.value for caption in at.caption)


def test_a_corrupted_sentence_from_the_url_and_one_of_another_length(h8):
    at = opened("patching.py", SENTENCE, query={"corrupt": "Two cats play in the snow."})
    assert at.text_input(key="patching_corrupt").value == "Two cats play in the snow."
    at.text_input(key="patching_corrupt").set_value("Two elephants play in the snow.").run()
    assert not at.exception
    message = at.error[0].value
    assert SENTENCE in message and "Two elephants play in the snow." in message and "8 pieces" in message
    at.radio(key="patching_metric").set_value("first").run()
    assert at.query_params["metric"] == "first"


def test_a_new_sentence_gets_a_new_suggestion(h8):
    at = opened("patching.py", SENTENCE)
    other = "A little girl is climbing the stairs of a wooden playhouse."
    at.session_state["sentence"] = other
    at.run()
    assert at.text_input(key="patching_corrupt").value == suggest_corruption(h8, other)


def test_heads_page_shows_the_detector_scores(h8):
    at = opened("heads.py", SENTENCE)
    assert "Head detectors (Olsson et al. 2022)" in [header.value for header in at.header]
    expected = detect_heads(h8)
    for kind, title in (("encoder", "Head detector scores, encoder self-attention"),
                        ("decoder", "Head detector scores, decoder self-attention (masked)")):
        panels = chart_titled(at, title)
        for panel, name in zip(panels, expected.scores[kind]):
            np.testing.assert_allclose(np.array(panel["z"], dtype=float), expected.scores[kind][name], atol=1e-9)
    table = [frame.value for frame in at.dataframe if "prefix matching" in frame.value.columns]
    assert len(table[0]) == 48 and table[1].loc[("encoder", "chance (uniform head)"), "previous token"] == \
        pytest.approx(expected.chance["encoder"]["previous_token"])
    assert any("not scored" in caption.value for caption in at.caption)


@pytest.mark.parametrize("family", ["gpt2", "bert", "marian"])
def test_a_tiny_hugging_face_models_pages_run(family, tmp_path_factory):
    folder = str(saved_model(family, tmp_path_factory))
    for page in ("patching.py", "heads.py"):
        at = opened(page, TINY_SENTENCE, model=OWN, own_model=folder)
        assert not at.exception
        if page == "patching.py":
            # a corrupted sentence that the tiny model reads as the same number of pieces, or a message saying why
            assert at.metric or at.error or at.info
        else:
            assert "Head detectors (Olsson et al. 2022)" in [header.value for header in at.header]
