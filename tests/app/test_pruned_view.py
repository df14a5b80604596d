"""One view on every page: the heads pruned on the Prune page (the link's `pruned=`) are applied by every page that
can, and every other page says at its top, in words, that it shows the whole model."""

import numpy as np
import pytest
from plotly.colors import hex_to_rgb

from explorer.analyses.sentence.rollout import attention_rollout, head_average
from explorer.capture.head_sets import live_heads, parse_heads
from explorer.capture.trace import trace_sentence
from explorer.capture.translation import translate
from explorer.figures.html_cells import NO_VALUE
from tests.app.conftest import html_figure, open_page, token_heatmaps
from tests.app.test_pages import grid_tile
from tests.explorer.test_thumbnails import assert_drawn, tiles
from tests.explorer.test_token_heatmap import heatmap_cells

SENTENCE = "Two dogs play in the snow."
PRUNED = "cross.0.*,cross.1.*"      # 16 heads: "Zwei Hunde spielen im Schnee und spielen im Schnee."

APPLIED = ["translation.py", "attention.py", "internals.py", "decoding.py"]
SHOWN_WHOLE = ["lesson.py", "heads.py", "faithfulness.py", "patching.py", "compare.py", "papers.py"]


def notices(at) -> str:
    return " ".join(element.value for element in [*at.info, *at.warning])


@pytest.mark.slow
@pytest.mark.parametrize("page", APPLIED + SHOWN_WHOLE)
def test_every_page_says_what_it_does_with_the_pruned_heads(page):
    at = open_page(page, SENTENCE, url_pruned=PRUNED)
    said = notices(at)
    assert "16 heads pruned" in said and "cross.0.0" in said and "cross.1.7" in said, said
    if page in APPLIED:
        assert "this page shows the model without them" in said
    else:
        assert "but this page shows the whole model" in said


def test_the_translation_page_shows_the_pruned_output_and_the_whole_models_beside_it(h8):
    at = open_page("translation.py", SENTENCE, url_pruned=PRUNED)
    pruned = translate(h8, [SENTENCE], pruned=parse_heads(PRUNED, h8))[0]
    whole = translate(h8, [SENTENCE])[0]
    assert pruned != whole                                          # the pruning matters on this sentence
    assert [t.value for t in at.text][:2] == [pruned, whole]


def test_without_pruning_no_page_speaks_of_it():
    at = open_page("translation.py", SENTENCE)
    assert "pruned" not in notices(at) and len(at.text) >= 1


def test_the_attention_page_averages_only_the_heads_at_work_and_warns_on_a_pruned_head(h8):
    at = open_page("attention.py", SENTENCE, url_pruned=PRUNED, attention_kind="cross", attention_layer=1,
                   attention_head=3)
    assert "cross.1.3 is pruned" in notices(at)
    at.session_state["attention_view"] = "Head average"
    at.run()
    trace = trace_sentence(h8, SENTENCE, pruned=parse_heads(PRUNED, h8))
    [average] = token_heatmaps(at, "cross, layer 1: average")
    drawn = heatmap_cells(average)["weights"]
    np.testing.assert_allclose(drawn, 0, atol=1e-9)                 # no head of layer 1 is at work
    at.session_state["attention_layer"] = 2
    at.run()
    [average] = token_heatmaps(at, "cross, layer 2: average")
    drawn = heatmap_cells(average)["weights"]
    np.testing.assert_allclose(drawn, trace.pattern("cross")[2].mean(0), atol=1e-6)     # all 8 at work


def test_pruned_heads_leave_the_head_average_and_rollout():
    rng = np.random.default_rng(0)
    pattern = rng.random((2, 4, 5, 5))
    pattern /= pattern.sum(-1, keepdims=True)
    live = np.array([[1, 0, 1, 0], [0, 0, 0, 0]])           # layer 1: every head pruned
    averaged = head_average(pattern, live)
    np.testing.assert_allclose(averaged[0], (pattern[0, 0] + pattern[0, 2]) / 2)
    np.testing.assert_allclose(averaged[1], 0)
    rolled = attention_rollout(pattern, live)
    first = 0.5 * averaged[0] + 0.5 * np.eye(5)
    first /= first.sum(-1, keepdims=True)
    np.testing.assert_allclose(rolled[0], first)
    np.testing.assert_allclose(rolled[1], first)            # a layer with no head at work passes its input on


def test_live_heads_marks_the_pruned_heads_of_one_kind(h8):
    live = live_heads(parse_heads(PRUNED, h8), h8, "cross")
    assert live.shape == (3, 8) and live.sum() == 24 - 16
    assert live[:2].sum() == 0 and live[2].sum() == 8
    assert live_heads(parse_heads(PRUNED, h8), h8, "encoder") is None


@pytest.mark.slow
@pytest.mark.parametrize("page", ["compare.py", "faithfulness.py", "patching.py"])
def test_a_page_that_decodes_greedily_says_so_when_the_sidebar_asks_for_beam_search(page):
    at = open_page(page, SENTENCE, decoding="beam search", beam_size=4)
    assert "asks for beam search (4 beams), but this page decodes greedily" in notices(at)
    assert "beam search" not in notices(open_page(page, SENTENCE))


@pytest.mark.slow
def test_the_farthest_sentence_is_named_literally_never_as_markdown():
    strange = "The [quarterly](http://example.com) *earnings* report exceeded analyst expectations."
    at = open_page("translation.py", "A dog runs on the grass with a ball. " + strange)
    said = [element.value for element in at.info if element.value.startswith("Part of your text")]
    assert said and "\\[quarterly\\]" in said[0] and "\\*earnings\\*" in said[0], said


def test_the_every_head_grid_blanks_a_pruned_head_as_the_word_table_does(h8):
    """A pruned head writes nothing: its tile is blank (outlined "pruned"), every other tile its own pattern."""
    at = open_page("attention.py", SENTENCE, url_pruned="enc.1.3", attention_kind="encoder",
                   attention_view="Every head")
    trace = trace_sentence(h8, SENTENCE, pruned=parse_heads("enc.1.3", h8))
    assert (grid_tile(at, 1, 3) == hex_to_rgb(NO_VALUE)).all()                          # blank
    assert_drawn(grid_tile(at, 1, 2), trace.pattern("encoder")[1, 2])
    assert_drawn(grid_tile(at, 0, 3), trace.pattern("encoder")[0, 3])
    grid = html_figure(at, "every-head")
    [pruned] = [tile for tile in tiles(grid) if tile["hover"].endswith("(pruned)")]
    assert pruned["hover"] == "encoder layer 1, head 3 (pruned)" and "darkorange" in pruned["markup"]
