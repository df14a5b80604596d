"""Projector mode prints the attention weights in the heatmap's cells (a class cannot hover): a short sentence's
whole heatmap, and a long sentence's focus window (16 tokens a side at the folded column's width), never the
overview of the whole pattern; off the projector the cells are colour alone."""

from __future__ import annotations

from tests.app.conftest import open_page, token_heatmaps
from tests.explorer.test_token_heatmap import heatmap_cells

SHORT = "Two dogs play in the snow."
LONG = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
        "old man sits on a bench.")


def printed(at) -> bool:
    """Whether every cell of the page's one-head heatmap prints its own weight (two decimals)."""
    cells = heatmap_cells(token_heatmaps(at)[0])
    return all(text == f"{cells['weights'][at_]:.2f}" for at_, text in cells["texts"].items())


def test_the_cells_print_their_weights_at_a_projector_for_a_short_sentence():
    assert printed(open_page("attention.py", SHORT, projector=True))
    assert not printed(open_page("attention.py", SHORT))
    long = open_page("attention.py", LONG, projector=True)
    assert printed(long) and len(heatmap_cells(token_heatmaps(long)[0])["keys"]) <= 20
    assert [block for block in long.get("html") if 'class="whole-pattern"' in block.proto.body]     # an image beside it
    assert not printed(open_page("attention.py", LONG))
