"""AppTest of the Patching page and the Heads page's head-detector section: what they draw is the explorer's own
numbers, the corrupted sentence is pre-filled and kept in the URL, bad input gets a message, and a tiny Hugging Face
model's pages run too."""

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.analyses.sentence.detectors import detect_heads
from explorer.analyses.sentence.patching import patch, suggest_corruption
from explorer.pages.components.session import OWN
from tests.app.test_pages import chart_titled
from tests.conftest import ROOT
from tests.hugging_face_models import SENTENCE as TINY_SENTENCE
from tests.hugging_face_models import saved_model

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
    assert at.text_area(key="patching_corrupt").value == corrupt
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
    # The command-line hint names the bundled model inside the project, not the server's absolute path.
    hint = next(caption.value for caption in at.caption if "python -m explorer patch" in caption.value)
    assert "--model en-de-h8 " in hint and str(ROOT) not in hint
    # Each side's changed word in bold: the words where the two sentences differ, worked out here by hand.
    changed = [(a, b) for a, b in zip(SENTENCE.split(), corrupt.split()) if a != b]
    blocks = [element.proto.body for element in at.get("html")]
    assert any(f"<b>{changed[0][0]}</b>" in block for block in blocks)
    assert any(f"<b>{changed[0][1]}</b>" in block for block in blocks)


def test_the_sentences_are_escaped_and_their_changed_word_bold():
    from explorer.analyses.sentence.patching import marked_changes

    clean, corrupt = "A <script>alert(1)</script> dog runs.", "A <script>alert(1)</script> cat runs."
    assert marked_changes(clean, corrupt) == "A &lt;script&gt;alert(1)&lt;/script&gt; <b>dog</b> runs."
    assert marked_changes(corrupt, clean) == "A &lt;script&gt;alert(1)&lt;/script&gt; <b>cat</b> runs."


def test_a_model_outside_the_project_is_named_by_its_folder(tmp_path):
    from explorer.settings import command_name

    assert command_name(ROOT / "models" / "en-de-h8") == "en-de-h8"
    assert command_name(tmp_path / "my-model") == "my-model"


def test_a_corrupted_sentence_from_the_url_and_one_of_another_length(h8):
    at = opened("patching.py", SENTENCE, query={"corrupt": "Two cats play in the snow."})
    assert at.text_area(key="patching_corrupt").value == "Two cats play in the snow."
    at.text_area(key="patching_corrupt").set_value("Two elephants play in the snow.").run()
    assert not at.exception
    message = at.error[0].value
    assert SENTENCE in message and "Two elephants play in the snow." in message and "8 pieces" in message
    at.radio(key="patching_metric").set_value("first").run()
    assert at.query_params["metric"] == "first"


@pytest.mark.slow
def test_a_new_sentence_gets_a_new_suggestion(h8):
    at = opened("patching.py", SENTENCE)
    other = "A little girl is climbing the stairs of a wooden playhouse."
    at.session_state["sentence"] = other
    at.run()
    assert at.text_area(key="patching_corrupt").value == suggest_corruption(h8, other)


@pytest.mark.slow
def test_the_lecture_sentence_opens_with_a_noun_swapped_and_says_which(h8):
    at = opened("patching.py", "The animal didn't cross the street because it was too tired.")
    assert at.text_area(key="patching_corrupt").value == "The dog didn't cross the street because it was too tired."
    assert "Suggested: “animal” → “dog” (an animal for an animal), with as many pieces." in [
        caption.value.split(" Edit")[0] for caption in at.caption]


def test_a_sentence_without_a_known_noun_asks_for_a_change(h8):
    at = opened("patching.py", "It was too tired.")
    assert at.text_area(key="patching_corrupt").value == "It was too tired."
    assert any(caption.value.startswith("No noun of a kind the explorer knows") for caption in at.caption)


def test_heads_page_shows_the_detector_scores(h8):
    at = opened("heads.py", SENTENCE, heads_part="Head detectors")
    assert "Head detectors (Olsson et al. 2022)" in [header.value for header in at.header]
    expected = detect_heads(h8)
    for kind, title in (("encoder", "Head detector scores, encoder self-attention"),
                        ("decoder", "Head detector scores, decoder self-attention (masked)")):
        panels = chart_titled(at, title)
        for panel, name in zip(panels, expected.scores[kind]):
            scores = expected.scores[kind][name]
            # The score written in each cell; the colour: log(score / chance) / log(best / chance), 0 to 1.
            assert np.array(panel["text"]).tolist() == [[f"{v:.2f}".replace("-0.00", "0.00") for v in row]
                                                        for row in scores]
            chance, best = expected.chance[kind][name], expected.ceiling[kind][name]
            colour = np.clip(np.log(np.maximum(scores, chance) / chance) / np.log(best / chance), 0, 1)
            np.testing.assert_allclose(np.array(panel["z"], dtype=float), colour, atol=1e-9)
    table = [frame for frame in at.dataframe if "prefix matching" in frame.value.columns]
    assert len(table[0].value) == 48 and table[1].value.loc[("encoder", "chance"), "previous token"] == \
        pytest.approx(expected.chance["encoder"]["previous_token"])
    # Every head's row in view (st.dataframe's rows and header are 35 px, its border 3), up to 50 rows.
    from explorer.pages.components.detector_section import table_height
    assert table_height(len(table[0].value)) == 35 * 49 + 3 and table_height(200) == 35 * 51 + 3
    assert any("not scored" in caption.value for caption in at.caption)
    hint = next(caption.value for caption in at.caption if "python -m explorer detect" in caption.value)
    assert "--model en-de-h8 " in hint and str(ROOT) not in hint


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gpt2", "bert", "marian"])
def test_a_tiny_hugging_face_models_pages_run(family, tmp_path_factory):
    folder = str(saved_model(family, tmp_path_factory))
    for page in ("patching.py", "heads.py"):
        at = opened(page, TINY_SENTENCE, model=OWN, own_model=folder, heads_part="Head detectors")
        assert not at.exception
        if page == "patching.py":
            # a corrupted sentence that the tiny model reads as the same number of pieces, or a message saying why
            assert at.metric or at.error or at.info or any("could be swapped" in c.value for c in at.caption)
        else:
            assert "Head detectors (Olsson et al. 2022)" in [header.value for header in at.header]
