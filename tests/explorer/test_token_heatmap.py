"""One head's heatmap as an HTML table (explorer/figures/token_heatmap.py): every cell's weight, position, colour and
hover read back from the markup and checked against the pattern it was drawn from."""

import html
import re

import numpy as np
import pytest
from plotly.colors import sample_colorscale

from explorer.figures.common import ABSOLUTE, FIGURE_SCALE, NORMS, PER_FIGURE, PROJECTOR_SCALE
from explorer.figures.matrix import Matrix
from explorer.figures.token_heatmap import html_heatmap

CELL = re.compile(r'<td data-query="(\d+)" data-key="(\d+)" data-weight="([^"]+)" title="([^"]*)" '
                  r'style="background: ([^;]+);[^"]*">([^<]*)</td>')


def heatmap_cells(body: str) -> dict:
    """A token heatmap's markup, read back: weights [rows, columns] (NaN where none), the query and key positions
    drawn, each cell's hover, background and printed text, and the row and column labels."""
    found = CELL.findall(body)
    queries = sorted({int(q) for q, *_ in found})
    keys = sorted({int(k) for _, k, *_ in found})
    weights = np.full((len(queries), len(keys)), np.nan)
    hovers, colours, texts = {}, {}, {}
    for query, key, weight, hover, colour, text in found:
        at = queries.index(int(query)), keys.index(int(key))
        weights[at] = float(weight)
        hovers[at], colours[at], texts[at] = html.unescape(hover), colour, html.unescape(text)
    assert len(found) == len(queries) * len(keys), "a table of every query by every key"
    row_labels = [html.unescape(label) for label in re.findall(r'class="query-label"[^>]*>([^<]*)</th>', body)]
    column_labels = [html.unescape(label) for label in re.findall(r'class="key-label"[^>]*>([^<]*)</div>', body)]
    return dict(weights=weights, queries=queries, keys=keys, hovers=hovers, colours=colours, texts=texts,
                rows=row_labels, columns=column_labels)


TOKENS = ["▁A", "▁dog", "<b>x</b>", "▁runs", "</s>"]


def pattern_of(rows: int, columns: int, seed: int = 0) -> np.ndarray:
    weights = np.random.default_rng(seed).random((rows, columns))
    return weights / weights.sum(axis=1, keepdims=True)


def test_every_cell_holds_its_weight_position_colour_and_hover():
    pattern = pattern_of(5, 5)
    cells = heatmap_cells(html_heatmap(Matrix(pattern, TOKENS, TOKENS, "encoder, layer 0, head 1")))
    np.testing.assert_allclose(cells["weights"], pattern, rtol=1e-5)
    assert cells["queries"] == cells["keys"] == list(range(5))
    assert cells["rows"] == cells["columns"] == ["0 ▁A", "1 ▁dog", "2 <b>x</b>", "3 ▁runs", "4 </s>"]
    # Blues over 0–1, as plotly's own colour for each weight
    for (row, column), colour in cells["colours"].items():
        assert colour == sample_colorscale("Blues", [float(pattern[row, column])])[0]
    assert cells["hovers"][2, 3] == f"query 2 <b>x</b>\nkey 3 ▁runs\nweight {pattern[2, 3]:.3f}"
    assert set(cells["texts"].values()) == {""}             # nothing printed: a person hovers


def test_markup_in_tokens_is_escaped():
    body = html_heatmap(Matrix(pattern_of(5, 5), TOKENS, TOKENS, "<script>alert(1)</script>"))
    assert "<b>x</b>" not in body and "<script>" not in body
    assert "&lt;b&gt;x&lt;/b&gt;" in body and "&lt;script&gt;" in body


def test_a_window_draws_its_part_coloured_on_the_whole_pattern():
    pattern = pattern_of(30, 30, seed=1)
    pattern[20, 25] = 5.0       # the whole pattern's largest, outside the window
    rows, columns = range(3, 11), range(6, 14)
    cells = heatmap_cells(html_heatmap(Matrix(pattern, [f"t{i}" for i in range(30)], [f"t{i}" for i in range(30)], "t",
                                              scale=PER_FIGURE, window=(rows, columns))))
    assert cells["queries"] == list(rows) and cells["keys"] == list(columns)
    np.testing.assert_allclose(cells["weights"], pattern[3:11, 6:14], rtol=1e-5)
    assert cells["rows"][0] == "3 t3" and cells["columns"][0] == "6 t6"
    # 0–5 over the whole pattern: every cell of the window is among the palest
    expected = sample_colorscale("Blues", [float(w) / 5.0 for w in pattern[3, 6:14]])
    assert [cells["colours"][0, c] for c in range(8)] == expected


def test_cross_attention_is_rectangular():
    pattern = pattern_of(3, 5)
    cells = heatmap_cells(html_heatmap(Matrix(pattern, ["▁Ein", "▁Hund", "</s>"], TOKENS, "cross")))
    assert cells["weights"].shape == (3, 5) and cells["rows"] == ["0 ▁Ein", "1 ▁Hund", "2 </s>"]
    assert cells["columns"] == ["0 ▁A", "1 ▁dog", "2 <b>x</b>", "3 ▁runs", "4 </s>"]
    assert cells["hovers"][2, 0] == f"query 2 </s>\nkey 0 ▁A\nweight {pattern[2, 0]:.3f}"


def test_an_empty_pattern_draws_an_empty_table():
    assert heatmap_cells(html_heatmap(Matrix(np.zeros((0, 0)), [], [], "nothing")))["weights"].size == 0


@pytest.mark.parametrize("scale, key", [(ABSOLUTE, "weight (0–1)"), (PER_FIGURE, "weight (0–0.5, this figure)"),
                                        (NORMS, "‖α·f(x)‖ (0–0.5, this figure)")])
def test_the_key_names_the_scale(scale, key):
    pattern = np.full((2, 2), 0.25)
    pattern[0, 0] = 0.5
    body = html_heatmap(Matrix(pattern, ["a", "b"], ["a", "b"], "t", scale=scale))
    assert f'data-legend="{html.escape(key)}"' in body
    if scale == NORMS:
        assert "‖α·f(x)‖ 0.500" in heatmap_cells(body)["hovers"][0, 0]


def test_a_pruned_heads_cells_are_blank_and_say_so():
    cells = heatmap_cells(html_heatmap(Matrix(np.full((2, 2), np.nan), ["a", "b"], ["a", "b"], "pruned")))
    assert np.isnan(cells["weights"]).all()
    assert set(cells["colours"].values()) == {"#f4f4f4"}
    assert cells["hovers"][0, 1].endswith("weight none (a pruned head)")


def test_projector_mode_prints_every_weight_in_larger_cells():
    pattern = pattern_of(4, 4)
    normal = html_heatmap(Matrix(pattern, TOKENS[:4], TOKENS[:4], "t"))
    token = FIGURE_SCALE.set(PROJECTOR_SCALE)
    try:
        projected = html_heatmap(Matrix(pattern, TOKENS[:4], TOKENS[:4], "t"))
    finally:
        FIGURE_SCALE.reset(token)
    printed = heatmap_cells(projected)["texts"]
    assert printed[1, 2] == f"{pattern[1, 2]:.2f}"
    width = lambda body: int(re.search(r"<td [^>]*width: (\d+)px", body).group(1))     # noqa: E731
    assert width(projected) > width(normal)
