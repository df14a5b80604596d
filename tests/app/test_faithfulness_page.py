"""The Faithfulness page (pages/faithfulness.py): its figure and table hold the explorer's own numbers, the colour
choice lives in the URL, and a tiny Hugging Face model's page runs too."""

import json

import numpy as np
import pytest

from explorer.faithfulness import ABNAR_ZUIDEMA, faithfulness
from pages.session import OWN
from tests.app.conftest import open_page
from tests.app.test_pages import traces_of
from tests.hugging_face_models import SENTENCE as TINY_SENTENCE, saved_model

SENTENCE = "Two dogs play in the snow."


def heatmap(at) -> dict:
    (chart,) = at.get("plotly_chart")
    return traces_of(json.loads(chart.proto.spec))[0]


def test_page_draws_the_scores_and_their_correlations(h8):
    at = open_page("faithfulness.py", SENTENCE)
    expected = faithfulness(h8, SENTENCE)
    drawn = heatmap(at)
    assert list(drawn["x"]) == [f"{i} {token}" for i, token in enumerate(expected.tokens)]    # every token labelled
    raw = np.array(drawn["customdata"], dtype=float)[..., 0]
    np.testing.assert_allclose(raw[0], expected.leave_one_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(raw[2], expected.attention["last_layer"], rtol=1e-4, atol=1e-6)
    (table,) = at.dataframe
    assert table.value.loc["rollout", "ρ with leave-one-out"] == pytest.approx(expected.spearman["rollout"])
    assert table.value.loc["flow", "Abnar & Zuidema (layer 6)"] == ABNAR_ZUIDEMA["flow"]

    at.radio(key="faithfulness_scale").set_value("ranks").run()
    assert not at.exception and at.query_params["faith"] == "ranks"
    ranks = np.array(heatmap(at)["z"], dtype=float)
    assert sorted(ranks[0]) == list(range(1, len(expected.tokens) + 1))
    assert ranks[0][int(np.argmax(expected.leave_one_out))] == 1


def test_too_short_a_sentence_is_a_sentence_not_an_error():
    at = open_page("faithfulness.py", "Dogs")
    assert any("cannot be scored" in info.value for info in at.info)


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_page_runs_on_tiny_hugging_face_models(family, tmp_path_factory):
    folder = str(saved_model(family, tmp_path_factory))
    at = open_page("faithfulness.py", TINY_SENTENCE, model=OWN, own_model=folder)
    assert not at.error and (at.get("plotly_chart") or any("cannot be scored" in i.value for i in at.info))
