"""The Internals page's figures at a projector's width (issue 30): a mask that hides nothing draws no blank panel,
and the Q, K, V walkthrough's numbers stand beside their bars at a readable size, inside their panels."""

import numpy as np

from explorer.figures.common import SMALLEST_FONT, text_width
from explorer.figures.internals import NO_MASK, scores_mask_softmax
from explorer.figures.matrix import MASK, Matrix, plotly_heatmap
from explorer.figures.walkthrough import WALK_PANEL, bar_number, room_for_numbers, walkthrough_figure
from tests.explorer.test_long_inputs import inputs, tokens, walk_of


def test_a_mask_that_hides_nothing_draws_no_blank_panel():
    scores, causal, pattern = inputs(8)
    figure = scores_mask_softmax(scores[0, 0], np.ones_like(causal), pattern[0, 0], tokens(8), tokens(8), "enc")
    assert [a.text for a in figure.layout.annotations[:2]] == ["scaled scores", "softmax → attention"]
    assert len(figure.data) == 2 and figure.layout.annotations[-1].text.startswith(NO_MASK)
    np.testing.assert_allclose(np.array(figure.data[1].z, dtype=float), pattern[0, 0])
    # The decoder's look-ahead mask hides keys: its four panels, the mask among them.
    masked = scores_mask_softmax(scores[0, 0], causal, pattern[0, 0], tokens(8), tokens(8), "dec")
    assert len(masked.data) == 4 and masked.layout.annotations[1].text == "+ mask"
    # So does a long sentence's zoomable version: two panels, not four.
    scores, causal, pattern = inputs(80, layers=1, heads=1)
    long = scores_mask_softmax(scores[0, 0], np.ones_like(causal), pattern[0, 0], tokens(80), tokens(80), "enc")
    assert len(long.data) == 2 and "−∞" not in long.layout.title.text


def rows_of(figure) -> set:
    """The rows of a figure's panels: the distinct bottoms of its four y axes."""
    return {round(figure.layout[name].domain[0], 3) for name in ("yaxis", "yaxis2", "yaxis3", "yaxis4")}


def test_the_scores_panels_sit_as_many_a_row_as_a_projectors_column_holds():
    scores, causal, pattern = inputs(20)
    figure = scores_mask_softmax(scores[0, 0], causal, pattern[0, 0], tokens(20), tokens(20), "dec")
    # 20 tokens at the sizing rule's 20 px: one 400 px panel a row in 560 px (two ran together at 1024 px).
    assert len({trace.xaxis for trace in figure.data}) == 4
    assert len(rows_of(figure)) == 4
    small = scores_mask_softmax(scores[0, 0][:5, :5], causal[:5, :5], pattern[0, 0][:5, :5], tokens(5), tokens(5), "s")
    assert len(rows_of(small)) == 2                                                  # 2 + 2


def test_the_walkthroughs_numbers_are_readable_and_inside_their_panels():
    walk = walk_of(20)
    figure = walkthrough_figure(walk, tokens(20), "▁man", 16)
    for column, (bars, values) in enumerate(zip(figure.data, (walk.dots, walk.masked, walk.weights)), start=1):
        assert bars.textposition == "outside" and bars.textfont.size >= SMALLEST_FONT
        assert all(len(text) <= 5 for text in bars.text)
        low, high = figure.layout[f"xaxis{column if column > 1 else ''}"].range
        per_px = (high - low) / WALK_PANEL          # the panel as narrow as at 1024 px
        for value, text in zip(np.where(np.isfinite(values), values, 0.0), bars.text):
            room = text_width(text, bars.textfont.size) * per_px
            assert (value - room >= low) if value < 0 else (value + room <= high), (column, value, text)
    assert list(figure.data[2].text[:3]) == [f"{w:.3f}" for w in walk.weights[:3]]     # 0.006, not 0.01
    assert figure.data[1].text[-1] == "−∞" and figure.data[1].customdata[0] == f"{walk.masked[0]:.3f}"
    assert bar_number(-12.345) == "-12.3" and bar_number(7.842) == "7.84" and bar_number(123.4) == "123"
    assert room_for_numbers(np.array([1.0, 2.0]), ["1.00", "2.00"], 11)[0] == 0.0       # nothing left of 0


def test_the_masks_key_stands_under_the_cells_and_a_batchs_positions_are_numbered_every_few():
    figure = plotly_heatmap(Matrix(np.tril(np.ones((30, 30), dtype=bool)), tokens(30), tokens(30), "mask", MASK))
    assert figure.data[0].colorbar.orientation == "h"                 # not 130 px beside the cells
    padding = plotly_heatmap(Matrix(np.array([[True] * 50, [True] * 5 + [False] * 45]), ["a", "b"], [], "padding", MASK,
                                    pieces=[tokens(50), tokens(5) + ["<pad>"] * 45]))
    assert padding.layout.xaxis.dtick == 2 and padding.layout.height < 320
    assert padding.data[0].textfont.size >= SMALLEST_FONT


def test_the_default_query_is_a_piece_that_starts_a_word():
    """A long sentence's middle can fall inside a word (its output step "28: m"): the default is the nearest piece
    that starts one, by the tokenizer's own mark."""
    from explorer.analyses.sentence.internals import default_query

    pieces = ["▁Ein", "▁Mann", "▁sch", "m", "ieden", "▁auf", "."]
    assert pieces[default_query(pieces)] in ("▁sch", "▁auf")
    wordpieces = ["[CLS]", "a", "play", "##s", "##x", "##y", "dog", "[SEP]"]
    assert not wordpieces[default_query(wordpieces)].startswith("##")
