"""A long sentence's focus window (issue 30): a part of the sentence drawn with every label at ≥ 11 px in a
projector's 560 px column, the whole pattern beside it, and the models of Compare side by side on one token."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from plotly.colors import sample_colorscale

from explorer.figures.common import (
    FIGURE_SCALE,
    NARROW_WIDTH,
    PRINTED_UP_TO,
    PROJECTOR_COLUMN,
    PROJECTOR_SCALE,
    SMALLEST_FONT,
    TITLE_FONT,
    dense_cell,
    text_width,
    wrapped_title,
)
from explorer.figures.focus import focus_room, focus_size, models_overview, tick_step
from explorer.figures.focus_strips import short_names, strips_table
from explorer.figures.matrix import Matrix, plotly_heatmap
from explorer.figures.windows import focus_range, window_range, window_text

WORDS_45 = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
            "old man with a grey hat sits on a wooden bench reading a newspaper under a large green umbrella near "
            "the water")
PIECES = [f"▁{word}" for word in WORDS_45.split()] + [".", "</s>"]        # 46 tokens, as a model's pieces
N = len(PIECES)


def pattern_of(queries: int, keys: int, seed: int = 0) -> np.ndarray:
    weights = np.random.default_rng(seed).random((queries, keys))
    return weights / weights.sum(axis=1, keepdims=True)


@pytest.fixture
def projector():
    token = FIGURE_SCALE.set(PROJECTOR_SCALE)
    yield
    FIGURE_SCALE.reset(token)


def test_a_window_moves_back_to_fit_and_holds_a_short_side_whole():
    assert focus_range(46, 10, 24) == range(10, 34)
    assert focus_range(46, 40, 24) == range(22, 46)             # moved left to end at the last token
    assert focus_range(20, 5, 24) == range(20)                  # a side the window holds: whole
    assert window_range(46, 10, 24) == range(46)                # bertviz's window only past LONG_FROM tokens
    assert window_range(100, 10, 24) == range(10, 34)


def test_the_window_says_its_words():
    assert window_text(PIECES, range(1, 7)) == "young boy in a red shirt"
    long = window_text(PIECES, range(0, 24))
    assert long == "A young boy in a … side and an old man"             # whole words either side
    assert len(long) <= 44
    assert window_text(["play", "##ing", "in"], range(3)) == "playing in"          # WordPiece
    assert window_text(["Ġthe", "Ġdog"], range(2)) == "the dog"                    # byte-level BPE


def test_the_focus_window_fits_a_projectors_column_with_every_label_at_11_px():
    size = focus_size(PIECES)
    assert 20 <= size < len(PIECES)
    rows = focus_range(len(PIECES), 12, size)
    pattern = pattern_of(N, N)
    figure = plotly_heatmap(Matrix(pattern, PIECES, PIECES, "encoder, layer 0, head 0", window=(rows, rows)))
    np.testing.assert_array_equal(figure.data[0].z, pattern[rows.start:rows.stop, rows.start:rows.stop])
    assert list(figure.data[0].x) == [f"{i} {PIECES[i]}" for i in rows]      # positions in the whole sentence
    assert figure.layout.width <= NARROW_WIDTH
    assert figure.layout.xaxis.tickfont.size == SMALLEST_FONT and figure.layout.xaxis.dtick == 1
    assert figure.layout.yaxis.tickfont.size == SMALLEST_FONT
    # the cells keep a dense cell a token: the plot's share of the width holds every key
    assert figure.layout.width - size * dense_cell() >= 200
    title = figure.layout.title.text
    assert f"tokens 12–{12 + size - 1} of {N}: “pool while" in title
    # coloured on the whole pattern's range, like the overview beside it
    per_figure = plotly_heatmap(Matrix(pattern, PIECES, PIECES, "t", window=(rows, rows), scale="per-figure"))
    assert per_figure.data[0].zmax == pytest.approx(pattern.max())
    assert "whole pattern" in per_figure.data[0].colorbar.title.text


def test_in_projector_mode_the_window_takes_the_folded_column_and_prints_every_weight(projector):
    size = focus_size(PIECES)
    rows = focus_range(len(PIECES), 0, size)
    pattern = pattern_of(N, N)
    figure = plotly_heatmap(Matrix(pattern, PIECES, PIECES, "t", window=(rows, rows)))
    assert figure.layout.xaxis.tickfont.size == 14
    assert 14 <= size <= PRINTED_UP_TO                        # a window a class reads, each weight printed
    assert PROJECTOR_COLUMN - 120 <= figure.layout.width <= PROJECTOR_COLUMN       # the column's width, not half
    assert figure.data[0].texttemplate == "%{z:.2f}" and figure.data[0].textfont.size == 14
    # each cell holds its printed weight: four digits at 14 px, 0.55 em each
    assert (figure.layout.width - focus_room(PIECES)) / size >= 4 * 0.55 * 14
    assert plotly_heatmap(Matrix(pattern, PIECES, PIECES, "t", window=(rows, rows))).data[0].z.shape == (size, size)


def test_off_projector_the_window_prints_no_weights():
    rows = focus_range(len(PIECES), 0, focus_size(PIECES))
    assert plotly_heatmap(Matrix(pattern_of(N, N), PIECES, PIECES, "t", window=(rows, rows))).data[0].texttemplate is None


def test_cross_attention_windows_each_side_and_says_both():
    queries = [f"▁Wort{i}" for i in range(35)]
    rows, columns = focus_range(35, 20, 22), focus_range(N, 20, 22)
    pattern = pattern_of(35, N)
    figure = plotly_heatmap(Matrix(pattern, queries, PIECES, "cross", window=(rows, columns)))
    assert rows == range(13, 35) and columns == range(20, 42)
    np.testing.assert_array_equal(figure.data[0].z, pattern[13:35, 20:42])
    title = figure.layout.title.text
    assert f"queries 13–34 of 35, keys 20–41 of {N}</sup><br><sup>keys: “and an old man" in title


def test_the_overview_is_the_whole_pattern_with_the_window_outlined():
    pattern = pattern_of(N, N)
    rows = range(12, 36)
    figure = plotly_heatmap(Matrix(pattern, PIECES, PIECES, window=(rows, rows)).overview())
    np.testing.assert_array_equal(figure.data[0].z, pattern)
    box = figure.layout.shapes[0]
    assert (box.x0, box.x1, box.y0, box.y1) == (11.5, 35.5, 11.5, 35.5)
    assert list(figure.layout.xaxis.ticktext) == [str(p) for p in range(0, N, 5)]
    assert figure.layout.xaxis.tickvals[3] == "15 ▁friends"                  # numbers at their tokens
    assert figure.layout.width <= NARROW_WIDTH and figure.data[0].showscale is False


def test_a_long_overview_is_pooled_and_numbers_whole_blocks():
    tokens = [f"▁t{i}" for i in range(600)]
    pattern = pattern_of(600, 600)
    figure = plotly_heatmap(Matrix(pattern, tokens, tokens, window=(range(100, 124), range(100, 124))).overview())
    assert np.shape(figure.data[0].z) == (300, 300)                          # blocks of 2 × 2 tokens
    assert "1/2 resolution" in figure.layout.title.text
    assert all(int(text) % 2 == 0 for text in figure.layout.xaxis.ticktext)
    assert figure.layout.shapes[0].x0 == 49.5


def test_tick_steps_are_round_and_far_enough_apart():
    assert tick_step(47, 300) == 10            # 6.4 px a token: every 10th, 64 px apart
    assert tick_step(10, 300) == 2
    assert tick_step(600, 300) == 100


def strip_cells(table: str) -> dict[tuple[str, int, int], dict]:
    """(model, head, row) → the cell's text, background and hover, as the strips table writes them."""
    found = re.findall(r'<td data-model="([^"]*)" data-head="(\d+)" data-row="(\d+)" title="([^"]*)" '
                       r'style="background: ([^;]+);[^>]*>([^<]*)</td>', table)
    return {(html.unescape(model), int(head), int(row)): {"hover": html.unescape(hover), "background": background,
                                                          "text": text}
            for model, head, row, hover, background, text in found}


def row_labels(table: str) -> list[str]:
    """The rows' labels, row by row (a row's models left to right), those of rows a model has not left out."""
    return [html.unescape(label) for label in re.findall(r'<th style="[^"]*text-align: right[^"]*" title="[^"]*">'
                                                          r'([^<]+)</th>', table)]


def test_three_models_compare_side_by_side_on_one_tokens_row_in_a_projectors_column():
    rows = {"en-de-h8": pattern_of(8, N, 1), "en-de-h2": pattern_of(2, N, 2), "en-de-h1": pattern_of(1, N, 3)}
    table = strips_table(rows, {name: PIECES for name in rows}, "What “▁his” attends to", "sub", "▁his", "from")
    cells = strip_cells(table)
    assert len(cells) == (8 + 2 + 1) * N                                    # a column a head, a row a key
    for name, values in rows.items():
        for head in range(len(values)):
            hover = cells[name, head, 11]["hover"]
            assert hover.startswith(f"{name} · head {head}\n“▁his” attends to 11 “▁swimming”")
            assert hover.endswith(f"weight {values[head, 11]:.3f}")
        # Each cell in plotly's Blues at its weight, on 0–1 (absolute: the models compare).
        assert [cells[name, 0, row]["background"] for row in range(N)] == sample_colorscale("Blues", list(values[0]))
    labels = row_labels(table)
    assert len(labels) == N and labels[11] == "11 ▁swimming"                 # shared tokens: labelled once
    assert re.findall(r'colspan="\d+"[^>]*>([^<]*)</th>', table) == ["h8", "h2", "h1"]
    cells_across = sum(int(width) for width in re.findall(r'data-row="0" title="[^"]*" style="[^"]*; width: (\d+)px',
                                                           table))
    assert cells_across == 11 * dense_cell()                                # a dense cell a head
    widest = max(text_width(label, SMALLEST_FONT) for label in labels) + 8 + cells_across + 2 * 14
    assert widest <= NARROW_WIDTH                                           # the three models fit a projector's column
    assert all(cell["text"] == "" for cell in cells.values())               # the weights on hover


def test_models_with_their_own_tokens_get_their_own_labels_and_markup_stays_text():
    outputs = {"h8": [f"▁Schwimmbecken{i}" for i in range(35)], "h2": [f"▁Wort{i}" for i in range(33)],
               "h1": ["<img src=x onerror=alert(1)>"] + [f"▁x{i}" for i in range(36)]}
    strips = {name: pattern_of({"h8": 8, "h2": 2, "h1": 1}[name], len(tokens)) for name, tokens in outputs.items()}
    table = strips_table(strips, outputs, "cross", "sub", "<b>", "to")
    labels = row_labels(table)
    assert len(labels) == 35 + 33 + 37                                      # each model its own labels
    assert "3 ▁Schwimmbec…" in labels and "0 <img src=x …" in labels         # long pieces cut; hover has them
    assert "▁Schwimmbecken3" in strip_cells(table)["h8", 0, 3]["hover"]
    assert "<img" not in table and "<b>" not in table
    assert strip_cells(table)["h1", 0, 0]["hover"].startswith("h1 · head 0\n0 “<img src=x onerror=alert(1)>” "
                                                               "attends to “<b>”")
    assert not [row for (name, _, row) in strip_cells(table) if name == "h2" and row >= 33]    # its rows end


def test_every_head_of_every_model_as_tiles():
    patterns = {"en-de-h8": np.stack([pattern_of(N, N, s) for s in range(8)]),
                "en-de-h2": np.stack([pattern_of(N, N, s) for s in range(10, 12)])}
    figure = models_overview(patterns, {n: PIECES for n in patterns}, {n: PIECES for n in patterns}, "every head",
                             focus_row=15, focus_column=15)
    assert len(figure.data) == 2                                  # one image a model, its heads tiled in it
    for trace, (_name, heads) in zip(figure.data, patterns.items()):
        z, head_of = np.asarray(trace.z, dtype=float), np.asarray(trace.customdata)
        assert np.isnan(z[head_of < 0]).all()                     # the gaps between tiles are blank
        for head in range(len(heads)):
            np.testing.assert_allclose(z[head_of == head].reshape(N, N), heads[head], atol=1e-6)
    z = np.asarray(figure.data[0].z, dtype=float)
    assert np.isnan(z[:N, N]).all() and not np.isnan(z[:N, :N]).any()     # head 0, then a gap before head 1
    assert len(set(figure.data[0].x)) == len(figure.data[0].x)    # every category its own: hover names the token
    assert figure.data[0].x[1] == f"1 {PIECES[1]}" and figure.data[0].x[-1] == figure.data[0].x[N - 1] + "\u200b" * 3
    assert "en-de-h8 · head %{customdata}" in figure.data[0].hovertemplate
    assert figure.layout.width == NARROW_WIDTH
    assert not figure.layout.xaxis.showticklabels                            # no token labels to crowd
    row, column = figure.layout.shapes[:2]
    assert (row.y0, row.y1) == (14.5, 15.5) and (column.x0, column.x1) == (14.5, 15.5)
    assert [a.text for a in figure.layout.annotations] == [f"head {h}" for h in range(8)] + ["head 0", "head 1"]
    # the h2 model starts its own row: its tiles under h8's, at the same left edge and cell size
    assert figure.data[1].xaxis == "x2" and figure.layout.xaxis2.domain[0] == figure.layout.xaxis.domain[0]
    assert figure.layout.yaxis2.domain[1] < figure.layout.yaxis.domain[0]
    per_cell = [(figure.layout[f"xaxis{a}"].domain[1] - figure.layout[f"xaxis{a}"].domain[0]) / len(trace.x)
                for a, trace in zip(("", "2"), figure.data)]
    assert per_cell[0] == pytest.approx(per_cell[1])
    assert [figure.layout[f"yaxis{n}"].title.text for n in ("", "2")] == ["en-de-h8", "en-de-h2"]


def test_every_head_of_a_long_text_is_pooled():
    tokens = [f"▁t{i}" for i in range(250)]
    patterns = {"a": np.stack([pattern_of(250, 250, s) for s in range(4)])}
    figure = models_overview(patterns, {"a": tokens}, {"a": tokens}, "every head")
    assert np.shape(figure.data[0].z)[0] < 100 and "resolution" in figure.layout.title.text
    assert np.nanmax(np.asarray(figure.data[0].z, dtype=float)) <= 1.0 + 1e-6


def test_names_lose_only_the_start_they_share():
    assert short_names(["en-de-h8", "en-de-h2", "en-de-h1"]) == ["h8", "h2", "h1"]
    assert short_names(["opus-mt-en-de", "en-de-h8"]) == ["opus-mt-en-de", "en-de-h8"]
    assert short_names(["model_a", "model_b"]) == ["a", "b"]
    assert short_names(["en-de-h8"]) == ["en-de-h8"]


def test_titles_wrap_to_the_figure_and_keep_their_small_lines():
    title = ("What “▁his” attends to, encoder layer 0<br><sup>a column a head (a model with fewer layers: its "
             "last)</sup>")
    wrapped = wrapped_title(title, 300)
    lines = wrapped.split("<br>")
    assert len(lines) > 2
    for line in lines:
        small = line.startswith("<sup>")
        text = line[5:-6] if small else line
        assert text_width(text, TITLE_FONT * (0.7 if small else 1)) <= 300
        assert small == line.endswith("</sup>")
    assert wrapped.replace("<br>", " ").replace("</sup> <sup>", " ") == title.replace("<br>", " ")
    assert wrapped_title("short", 300) == "short"


def test_in_projector_mode_twenty_tokens_are_drawn_whole_and_twenty_one_get_a_window(projector):
    from explorer.figures.focus import drawn_whole

    twenty = [f"▁w{i}" for i in range(20)]
    assert focus_size(twenty) < 20 and drawn_whole(twenty, twenty)       # every weight printed, whole
    assert not drawn_whole(twenty + ["▁more"], twenty + ["▁more"])


def test_in_projector_mode_compares_figures_take_the_folded_column_and_print_the_weights(projector):
    from explorer.figures.common import printed_cell

    rows = {"en-de-h8": pattern_of(8, N, 1), "en-de-h2": pattern_of(2, N, 2), "en-de-h1": pattern_of(1, N, 3)}
    table = strips_table(rows, {name: PIECES for name in rows}, "What “▁his” attends to", "sub", "▁his", "from")
    cells = strip_cells(table)
    assert cells["en-de-h8", 3, 5]["text"] == f"{rows['en-de-h8'][3, 5]:.2f}"    # each cell's weight, for a class
    width = int(re.search(r"width: (\d+)px; min-width", table).group(1))
    assert printed_cell() <= width and 11 * width <= PROJECTOR_COLUMN            # the heads share the whole column
    patterns = {"en-de-h8": np.stack([pattern_of(N, N, s) for s in range(8)])}
    tiles = models_overview(patterns, {"en-de-h8": PIECES}, {"en-de-h8": PIECES}, "every head")
    assert tiles.layout.width == PROJECTOR_COLUMN
