"""The heads' tiles (explorer/figures/thumbnails.py): each tile's PNG decoded back and checked cell by cell against
the colour plotly's own scale gives its weight, pooled as the pooling module pools, blank where a head is pruned,
its flags, focus outlines and texts in the markup; the whole pattern beside a focus window likewise."""

from __future__ import annotations

import base64
import html
import io
import re

import numpy as np
import pytest
from PIL import Image
from plotly.colors import hex_to_rgb, unlabel_rgb

from explorer.figures.common import ABSOLUTE, NORMS, PER_FIGURE
from explorer.figures.html_cells import NO_VALUE, scale_colours
from explorer.figures.pooling import budget_factor, pooled_attention
from explorer.figures.thumbnails import MAX_TILE_CELLS, Tile, thumbnail_grid, whole_pattern

TILE = re.compile(r'<td class="tile" data-head="([^"]*)" title="([^"]*)".*?<img src="data:image/png;base64,([^"]+)"'
                  r'.*?</td>', re.S)


def tiles(body: str) -> list[dict]:
    """Every tile of a figure, in order: its name, hover, pixels [rows, columns, 3] and markup."""
    return [{"name": html.unescape(name), "hover": html.unescape(hover), "markup": match.group(0),
             "pixels": np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"), dtype=int)}
            for match in [*TILE.finditer(body)] for name, hover, data in [match.groups()]]


def expected_pixels(pattern: np.ndarray, low: float, high: float) -> np.ndarray:
    """The colours plotly's Blues gives each weight on [low, high] (NO_VALUE where none), as [rows, columns, 3]."""
    colours = scale_colours("Blues", pattern, low, high)
    rgb = [hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour) for colour in colours]
    return np.reshape(np.array(rgb, dtype=float), (*np.shape(pattern), 3))


def assert_drawn(pixels: np.ndarray, pattern: np.ndarray, low: float = 0.0, high: float = 1.0) -> None:
    """A tile shows `pattern`: each pixel within one of the tile's 256 colour steps of the weight's own colour."""
    assert pixels.shape[:2] == np.shape(pattern)
    assert np.abs(pixels - expected_pixels(pattern, low, high)).max() <= 3


def attention(rng, rows: int, columns: int) -> np.ndarray:
    weights = rng.random((rows, columns)) ** 6
    return weights / weights.sum(axis=1, keepdims=True)


def test_each_tile_shows_its_heads_weights_cell_by_cell():
    rng = np.random.default_rng(0)
    pattern = np.stack([[attention(rng, 7, 9) for _ in range(3)] for _ in range(2)])    # 2 layers × 3 heads
    body = thumbnail_grid([(f"layer {layer}", [Tile(pattern[layer, head], f"head {head}", f"L{layer} H{head}")
                                               for head in range(3)]) for layer in range(2)], "t", "s", ABSOLUTE)
    shown = tiles(body)
    assert [tile["name"] for tile in shown] == ["head 0", "head 1", "head 2"] * 2
    assert [tile["hover"] for tile in shown] == [f"L{layer} H{h}" for layer in range(2) for h in range(3)]
    for index, tile in enumerate(shown):
        assert_drawn(tile["pixels"], pattern[index // 3, index % 3])
    assert ">layer 1</th>" in body and 'data-legend="weight (0–1)"' in body


def test_a_pruned_heads_blank_weights_are_grey_and_the_tile_outlined_pruned():
    rng = np.random.default_rng(1)
    blank = np.full((5, 5), np.nan)
    body = thumbnail_grid([("layer 0", [Tile(attention(rng, 5, 5), "head 0", "h0"),
                                        Tile(blank, "head 1", "h1", "pruned")])], "t", "", ABSOLUTE)
    first, pruned = tiles(body)
    assert (pruned["pixels"] == hex_to_rgb(NO_VALUE)).all()
    assert "darkorange" in pruned["markup"] and "darkorange" not in first["markup"]
    assert ">pruned</span>" in pruned["markup"] and pruned["hover"] == "h1 (pruned)"


def test_past_eight_heads_a_flag_is_a_mark_and_its_note_in_the_hover():
    rng = np.random.default_rng(2)
    heads = [Tile(attention(rng, 4, 4), f"h{h}", f"head {h}", "sink 0.83" if h == 3 else "") for h in range(12)]
    flagged = tiles(thumbnail_grid([("layer 0", heads)], "t", "", ABSOLUTE))[3]
    written = re.sub(r'title="[^"]*"', "", flagged["markup"])       # what the tile shows, without its hover
    assert ">S</span>" in written and "sink 0.83" not in written
    assert flagged["hover"] == "head 3 (sink 0.83)"


def test_a_long_sentence_is_pooled_as_the_pooling_module_pools_and_the_subtitle_says_so():
    rng = np.random.default_rng(3)
    pattern = attention(rng, 300, 300)
    body = thumbnail_grid([("layer 0", [Tile(pattern, "head 0", "h0")])], "t", "whole", ABSOLUTE)
    [tile] = tiles(body)
    factor = -(-300 // MAX_TILE_CELLS)
    assert tile["pixels"].shape[0] == -(-300 // factor) <= MAX_TILE_CELLS
    assert_drawn(tile["pixels"], pooled_attention(pattern, factor, factor))
    assert f"1/{factor} resolution" in body and "hover for its tokens" not in body      # a tile's hover names its head


def test_per_figure_colours_run_to_the_largest_weight_of_every_tile():
    rng = np.random.default_rng(4)
    small = [attention(rng, 6, 30) * 0.5 for _ in range(2)]        # rows sum to 0.5: at most 0.5 a cell
    body = thumbnail_grid([("m", [Tile(p, f"head {h}", "") for h, p in enumerate(small)])], "t", "", PER_FIGURE)
    high = max(float(p.max()) for p in small)
    for tile, pattern in zip(tiles(body), small):
        assert_drawn(tile["pixels"], pattern, 0.0, high)
    assert f"weight (0–{high:.2g}, this figure)" in body


@pytest.mark.parametrize("row, column", [(0, 0), (3, 5)])
def test_the_focus_tokens_row_and_column_are_outlined_where_they_are(row, column):
    rng = np.random.default_rng(5)
    body = thumbnail_grid([("m", [Tile(attention(rng, 8, 10), "head 0", "")])], "t", "", ABSOLUTE,
                          focus_row=row, focus_column=column)
    boxes = re.findall(r'class="focus" style="position: absolute; left: ([\d.]+)%; top: ([\d.]+)%; '
                       r'width: ([\d.]+)%; height: ([\d.]+)%', body)
    assert [tuple(map(float, box)) for box in boxes] == [(0, pytest.approx(100 * row / 8), 100, 12.5),
                                                         (pytest.approx(10.0 * column), 0, 10, 100)]


def test_a_pooled_tiles_focus_outline_is_on_the_block_that_holds_the_token():
    rng = np.random.default_rng(9)
    body = thumbnail_grid([("m", [Tile(attention(rng, 300, 300), "head 0", "")])], "t", "", ABSOLUTE,
                          focus_row=200, focus_column=7)
    block = -(-300 // MAX_TILE_CELLS)                      # tokens a block
    blocks = -(-300 // block)                              # blocks a side
    rows = [100 * (position // block) / blocks for position in range(300)]       # each token's block, in %
    boxes = re.findall(r'class="focus" style="position: absolute; left: ([\d.]+)%; top: ([\d.]+)%', body)
    assert [tuple(map(float, box)) for box in boxes] == [(0, pytest.approx(rows[200], abs=1e-3)),
                                                         (pytest.approx(rows[7], abs=1e-3), 0)]


def test_every_tile_has_cells_of_one_size_whatever_its_models_pieces():
    rng = np.random.default_rng(10)
    body = thumbnail_grid([("a", [Tile(attention(rng, 10, 10), "head 0", "")]),
                           ("b", [Tile(attention(rng, 5, 5), "head 0", "")])], "t", "", ABSOLUTE)
    widths = [float(width) for width in re.findall(r'position: relative; width: ([\d.]+)%', body)]
    assert widths == [100, 50]                     # half the pieces: half as wide, its cells as large


def test_norms_are_coloured_to_their_largest_and_the_key_says_so():
    norms = np.array([[0.0, 2.0], [4.0, 1.0]])
    body = thumbnail_grid([("m", [Tile(norms, "head 0", "")])], "t", "", NORMS)
    assert_drawn(tiles(body)[0]["pixels"], norms, 0.0, 4.0)
    assert 'data-legend="‖α·f(x)‖ (0–4, this figure)"' in body


def test_every_text_is_escaped_once():
    rng = np.random.default_rng(6)
    body = thumbnail_grid([("<b>model</b>", [Tile(attention(rng, 3, 3), "<i>", "a & b")])], "<script>x</script>",
                          "“<s>”", ABSOLUTE)
    assert "<script>" not in body and "<b>" not in body and "<i>" not in body
    assert "&lt;script&gt;" in body and "&amp;lt;" not in body
    assert tiles(body)[0]["hover"] == "a & b"


def image_of(body: str) -> np.ndarray:
    """The one image of a figure (the whole pattern), decoded: [rows, columns, 3] RGB."""
    [data] = re.findall(r'<img src="data:image/png;base64,([^"]+)"', body)
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"), dtype=int)


def window_box(body: str) -> tuple[float, ...]:
    """The outlined window's left, top, width and height, in % of the whole pattern."""
    [box] = re.findall(r'class="focus" style="position: absolute; left: ([\d.]+)%; top: ([\d.]+)%; '
                       r'width: ([\d.]+)%; height: ([\d.]+)%', body)
    return tuple(map(float, box))


def test_the_whole_pattern_beside_a_window_shows_every_cell_the_window_and_numbered_positions():
    rng = np.random.default_rng(7)
    pattern = attention(rng, 49, 49)
    body = whole_pattern(pattern, 49, 49, range(10, 34), range(10, 34), ABSOLUTE)
    assert_drawn(image_of(body), pattern)
    assert window_box(body) == pytest.approx((100 * 10 / 49, 100 * 10 / 49, 100 * 24 / 49, 100 * 24 / 49), abs=1e-3)
    keys = re.findall(r'class="key-number"[^>]*>(\d+)<', body)
    assert keys[:3] == ["0", "5", "10"] and re.findall(r'class="query-number"[^>]*>(\d+)<', body)[-1] == "45"
    assert "The whole pattern: 49 × 49" in body


@pytest.mark.slow
def test_a_long_whole_pattern_is_pooled_within_the_figures_budget_and_says_so():
    rng = np.random.default_rng(8)
    pattern = attention(rng, 600, 600)
    body = whole_pattern(pattern, 600, 600, range(0, 24), range(0, 24), ABSOLUTE)
    factor = int(re.search(r"1/(\d+) resolution", body).group(1))
    assert factor >= budget_factor(600, 600) and -(-600 // factor) <= 270        # a cell a pixel at most
    assert_drawn(image_of(body), pooled_attention(pattern, factor, factor))
    assert "hover for its tokens" not in body
    blocks = -(-600 // factor)
    window = range(101, 125)                    # an odd start: the outline covers every block the window touches
    body = whole_pattern(pattern, 600, 600, window, window, ABSOLUTE)
    touched = sorted({position // factor for position in window})
    assert window_box(body) == pytest.approx((100 * touched[0] / blocks, 100 * touched[0] / blocks,
                                              100 * len(touched) / blocks, 100 * len(touched) / blocks), abs=1e-3)
