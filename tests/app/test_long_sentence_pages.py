"""A 45-word sentence on the Attention and Compare pages (issue 30): a focus window of the sentence drawn with every
label, the whole pattern beside it, the window kept in the URL; Compare's models side by side on the focus token."""

import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.capture.trace import trace_sentence
from explorer.models.checkpoint import load_checkpoint
from tests.app.conftest import html_figure, open_page, token_heatmaps
from tests.app.test_pages import decoded
from tests.conftest import ROOT, SHIPPED
from tests.explorer.test_focus_window import row_labels, strip_cells
from tests.explorer.test_thumbnails import assert_drawn, image_of, window_box
from tests.explorer.test_thumbnails import tiles as thumbnails
from tests.explorer.test_token_heatmap import heatmap_cells

WORDS_45 = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
            "old man with a grey hat sits on a wooden bench reading a newspaper under a large green umbrella near "
            "the water.")


def specs(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def strips_of(at) -> str:
    """The Compare page's focus token strips (an HTML table)."""
    strips = html_figure(at, "focus-strips")
    return strips


def z(spec: dict, index: int = 0) -> np.ndarray:
    return np.array(decoded(spec["data"][index]["z"]), dtype=float)


@pytest.mark.slow
def test_attention_draws_a_window_of_a_long_sentence_and_the_whole_pattern(h8):
    trace = trace_sentence(h8, WORDS_45)
    pattern = trace.pattern("encoder")[0, 0]
    count = len(trace.source_tokens)
    at = open_page("attention.py", WORDS_45)
    [body] = token_heatmaps(at)
    window = heatmap_cells(body)
    whole = html_figure(at, "whole-pattern")
    size = len(window["keys"])
    assert 20 <= size < count                                       # 24 of the 49 pieces
    np.testing.assert_allclose(window["weights"], pattern[:size, :size], atol=1e-5)
    assert window["columns"][:2] == [f"0 {trace.source_tokens[0]}", f"1 {trace.source_tokens[1]}"]
    # every label at the smallest font or larger (its width in a projector's column: tests/browser/test_every_page.py)
    assert min(int(px) for px in re.findall(r"font-size: (\d+)px", body)) >= 11
    assert_drawn(image_of(whole), pattern)                          # the whole pattern, an image (thumbnails.py)
    assert window_box(whole) == pytest.approx((0, 0, 100 * size / count, 100 * size / count), abs=1e-3)   # outlined

    slider = at.select_slider(key="attention_tokens")
    slider.set_value(20).run()
    assert at.query_params["tokens"] in ("20", ["20"])               # a link keeps the window
    body = token_heatmaps(at)[0]
    window = heatmap_cells(body)
    np.testing.assert_allclose(window["weights"], pattern[20:20 + size, 20:20 + size], atol=1e-5)
    assert window["queries"] == window["keys"] == list(range(20, 20 + size))
    assert f"tokens 20–{20 + size - 1} of {count}" in body

    at.session_state["attention_view"] = "Head average"
    at.run()
    [average] = token_heatmaps(at, "average of the 8 heads")
    np.testing.assert_allclose(heatmap_cells(average)["weights"],
                               trace.pattern("encoder")[0].mean(axis=0)[20:20 + size, 20:20 + size], atol=1e-5)


def test_a_link_opens_attention_on_its_window_and_a_short_sentence_needs_none():
    link = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    link.query_params.update({"sentence": WORDS_45, "tokens": "15"})
    link.run()
    link.switch_page("attention.py")
    link.run()
    assert not link.exception
    assert link.select_slider(key="attention_tokens").value == 15
    assert "tokens 15–" in token_heatmaps(link)[0]
    link.switch_page("translation.py").run()             # Streamlit forgets the slider on another page; the view not
    link.switch_page("attention.py").run()
    assert link.select_slider(key="attention_tokens").value == 15 and link.query_params["tokens"] in ("15", ["15"])

    short = open_page("attention.py", "Two dogs play in the snow.")
    assert not short.get("select_slider") and "tokens" not in short.query_params


@pytest.mark.slow
def test_compare_sets_the_models_side_by_side_on_the_focus_token_at_45_words():
    if len(SHIPPED) < 3:
        return
    traces = {heads: trace_sentence(load_checkpoint(path), WORDS_45) for heads, path in SHIPPED.items()}
    focus = traces[8].source_tokens.index("▁his")
    at = open_page("compare.py", WORDS_45)
    at.selectbox(key="compare_focus").select(focus).run()
    strips = strips_of(at)
    assert specs(at) == []                                         # no stack of whole labelled patterns
    tiles = html_figure(at, "every-head-of-every-model")
    assert "What “▁his” attends to" in strips
    shown = [int(name.removeprefix("h")) for name in re.findall(r'colspan="\d+"[^>]*>([^<]*)</th>', strips)]
    assert sorted(shown) == [1, 2, 8]
    cells = strip_cells(strips)
    for heads in shown:                                            # a column a head, a row a key
        expected = traces[heads].pattern("encoder")[0, :, focus]
        weights = [[float(cells[f"en-de-h{heads}", head, row]["hover"].rsplit(" ", 1)[1]) for row in range(expected.shape[1])]
                   for head in range(heads)]
        np.testing.assert_allclose(weights, expected, atol=5e-4)   # the hover's three decimals
    assert len(row_labels(strips)) == len(traces[8].source_tokens)                   # labelled once, shared
    assert len(thumbnails(tiles)) == 8 + 2 + 1 and "width: 560px" in tiles         # a tile a head, in a projector's column
    [head_3] = [tile for tile in thumbnails(tiles) if tile["hover"] == "en-de-h8 · head 3"]
    assert_drawn(head_3["pixels"], traces[8].pattern("encoder")[0, 3])

    at.radio(key="compare_kind").set_value("cross").run()
    strips = strips_of(at)
    assert "attend to “▁his”" in strips
    cells = strip_cells(strips)
    for heads in shown:                                            # each model's output tokens down its column
        expected = traces[heads].pattern("cross")[0, :, :, focus]
        weights = [[float(cells[f"en-de-h{heads}", head, row]["hover"].rsplit(" ", 1)[1]) for row in range(expected.shape[1])]
                   for head in range(heads)]
        np.testing.assert_allclose(weights, expected, atol=5e-4)
        assert not [row for (name, _, row) in cells if name == f"en-de-h{heads}" and row >= len(traces[heads].target_tokens)]

    at.radio(key="compare_kind").set_value("decoder").run()
    tiles = html_figure(at, "every-head-of-every-model")
    assert len(thumbnails(tiles)) == 11 and any("no token is shared to follow" in c.value for c in at.caption)
    assert 'class="focus"' not in tiles                            # no shared token: nothing outlined


@pytest.mark.slow
def test_the_image_figures_html_download_is_the_plotly_figure_with_every_tokens_hover(monkeypatch):
    """The every-head tiles, the whole pattern, Compare's tiles and one head's window are HTML on the page; each
    one's ⬇ HTML is the interactive plotly figure they stand for, whose hover names every cell's tokens (built only
    on a click), its camera saving an SVG."""
    import explorer.pages.components.widgets as widgets

    made = {}
    downloads = widgets.downloads

    def kept(name, page, numbers=None):
        made[name] = page
        downloads(name, page, numbers)

    monkeypatch.setattr(widgets, "downloads", kept)
    open_page("attention.py", WORDS_45)
    open_page("compare.py", WORDS_45)
    for name, words in (("encoder-all-heads", ["encoder: 3 layers × 8 heads (hover for tokens)", "L2 · 44 ▁near"]),
                        ("encoder-L0-H0-whole", ["The whole pattern: 49 × 49", "hover names the tokens"]),
                        ("compare-encoder-L0-every-head", ["Every head of every model, encoder layer 0"]),
                        ("encoder-L0-H0", ["encoder, layer 0, head 0", "tokens 0–", "query %{y}"])):
        page = made[name]()             # plotly writes its figure's JSON ASCII-escaped, as json.dumps does
        assert "Plotly.newPlot" in page and [w for w in words if json.dumps(w)[1:-1] not in page] == [], name
        assert '"format": "svg"' in page and f'"filename": "{name}"' in page, name
