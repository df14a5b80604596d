"""The Faithfulness page (pages/faithfulness.py): its figure and table hold the explorer's own numbers, the colour
choice lives in the URL, and a tiny Hugging Face model's page runs too."""

import json

import numpy as np
import pytest

from explorer.analyses.sentence.faithfulness import ABNAR_ZUIDEMA, faithfulness
from explorer.pages.components.session import OWN
from tests.app.conftest import open_page
from tests.app.test_pages import traces_of
from tests.hugging_face_models import SENTENCE as TINY_SENTENCE
from tests.hugging_face_models import saved_model

SENTENCE = "Two dogs play in the snow."


def heatmap(at) -> dict:
    (chart,) = at.get("plotly_chart")
    return traces_of(json.loads(chart.proto.spec))[0]


@pytest.mark.slow
def test_page_draws_the_scores_and_their_correlations(h8):
    at = open_page("faithfulness.py", SENTENCE)
    expected = faithfulness(h8, SENTENCE)
    drawn = heatmap(at)
    assert list(drawn["x"]) == [f"{i} {token}" for i, token in enumerate(expected.tokens)]    # every token labelled
    raw = np.array(drawn["customdata"], dtype=float)[..., 0]
    np.testing.assert_allclose(raw[0], expected.leave_one_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(raw[2], expected.attention["last_layer"], rtol=1e-4, atol=1e-6)
    (table,) = at.table          # static: its long column names wrap, every one in view at 1024 px
    shown = table.value          # as the page shows it: two decimals, blank cells where there is no number
    assert shown.loc["rollout", "ρ with leave-one-out"] == f"{expected.spearman['rollout']:.2f}"
    assert shown.loc["flow", "Abnar & Zuidema 2020, their model (published)"] == f"{ABNAR_ZUIDEMA['flow']:.2f}"
    assert shown.loc["gradient × input", "Abnar & Zuidema 2020, their model (published)"] == ""
    assert not shown.isna().to_numpy().any() and "None" not in shown.to_numpy()

    at.radio(key="faithfulness_scale").set_value("ranks").run()
    assert not at.exception and at.query_params["faith"] == "ranks"
    ranks = np.array(heatmap(at)["z"], dtype=float)
    assert sorted(ranks[0]) == list(range(1, len(expected.tokens) + 1))
    assert ranks[0][int(np.argmax(expected.leave_one_out))] == 1


def test_a_long_sentences_figure_keeps_the_sizing_rules_cell_per_token(h8):
    """Every token keeps the sizing rule's cell: across the column while they fit a projector's column (a 1024 px
    window's, the narrowest) beside the names and the colour bar; beyond, a row per token, the figure growing down
    with the sentence (plotly figures never grow wider than the page's column), the same numbers transposed."""
    from explorer.analyses.sentence.faithfulness import METHOD_TITLES
    from explorer.figures.common import cell_size
    from explorer.figures.faithfulness import COLOUR_BAR, NARROWEST_COLUMN, VALUES, faithfulness_figure, names_width

    methods = ("leave_one_out", "gradient_x_input", "last_layer", "rollout", "flow", "norm")
    names = [METHOD_TITLES[m] for m in methods]
    heights = {}
    for count in (8, 13, 19, 23, 48, 55):
        tokens = [f"▁w{i}" for i in range(count)]
        scores = {name: np.linspace(1, 2, count) * (i + 1) for i, name in enumerate(methods)}
        figure = faithfulness_figure(scores, METHOD_TITLES, tokens, VALUES, "t")
        (trace,) = figure.data
        assert figure.layout.width is None
        if list(trace.x) == [f"{i} ▁w{i}" for i in range(count)]:             # tokens across
            assert NARROWEST_COLUMN - names_width(names) - COLOUR_BAR >= cell_size(count) * count
        else:                                                                  # a row per token
            assert list(trace.y) == [f"{i} ▁w{i}" for i in range(count)] and list(trace.x) == names
            assert figure.layout.height - figure.layout.margin.t >= cell_size(count) * count
            np.testing.assert_allclose(np.array(trace.customdata)[5, :, 0], [scores[m][5] for m in methods])
            heights[count] = figure.layout.height
        assert trace.colorbar.title.text.startswith("share of")
    # 19 tokens (the lecture's sentence) squeezed their labels together across a 1024 px window's column.
    assert NARROWEST_COLUMN <= 564 and list(heights) == [19, 23, 48, 55] and heights[55] > heights[48]


def test_too_short_a_sentence_is_a_sentence_not_an_error():
    at = open_page("faithfulness.py", "Dogs")
    assert any("cannot be scored" in info.value for info in at.info)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_page_runs_on_tiny_hugging_face_models(family, tmp_path_factory):
    """The page draws the analysis of the model's own computation, or says why the sentence cannot be scored:
    which of the two, and the numbers, computed here from the model itself."""
    from explorer.analyses.sentence.faithfulness import Unscorable
    from explorer.models.loader import open_model

    folder = str(saved_model(family, tmp_path_factory))
    at = open_page("faithfulness.py", TINY_SENTENCE, model=OWN, own_model=folder)
    assert not at.error and not at.exception
    try:
        expected = faithfulness(open_model(folder), TINY_SENTENCE)
    except Unscorable as why:
        assert [i.value for i in at.info if "cannot be scored" in i.value] == [f"This sentence cannot be scored: {why}."]
        assert not at.get("plotly_chart")
        return
    drawn = heatmap(at)
    raw = np.array(drawn["customdata"], dtype=float)[..., 0]
    np.testing.assert_allclose(raw[0], expected.leave_one_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(raw[2], expected.attention["last_layer"], rtol=1e-4, atol=1e-6)
