"""A batch's padding mask in HTML (explorer/figures/padding_mask.py): every cell's mask value and piece read back and
checked against the model's own padded batch."""

import html
import re

import numpy as np

from explorer.analyses.sentence.internals import batch_padding_mask
from explorer.figures.padding_mask import ALLOWED, BLOCKED, padding_mask_html

CELL = re.compile(r'class="mask-cell" data-row="(\d+)" data-position="(\d+)" data-allowed="([01])" title="([^"]*)" '
                  r'style="[^"]*background: ([^;]+);.*?class="piece"[^>]*>([^<]*)</div>')


def mask_cells(body: str) -> tuple[np.ndarray, list[list[str]], dict]:
    """The drawn mask [rows, positions], each cell's piece, and each cell's (hover, colour)."""
    found = CELL.findall(body)
    rows, positions = 1 + max(int(r) for r, *_ in found), 1 + max(int(p) for _, p, *_ in found)
    mask = np.zeros((rows, positions), dtype=bool)
    pieces = [[""] * positions for _ in range(rows)]
    shown = {}
    for row, position, allowed, hover, colour, piece in found:
        at = int(row), int(position)
        mask[at] = allowed == "1"
        pieces[at[0]][at[1]] = html.unescape(piece)
        shown[at] = html.unescape(hover), colour
    assert len(found) == rows * positions
    return mask, pieces, shown


def test_the_drawn_mask_is_the_models_own_batch(h8):
    padding, pieces = batch_padding_mask(h8, ["A dog runs on the beach.", "A cat."])
    body = padding_mask_html(padding, ["your sentence", "a shorter sentence"], pieces, "Padding mask of a batch")
    mask, drawn_pieces, shown = mask_cells(body)
    np.testing.assert_array_equal(mask, padding)
    assert drawn_pieces == pieces and not padding[1].all()           # the short one's pads are blocked
    pad = int(np.flatnonzero(~padding[1])[0])
    assert shown[1, pad] == (f"a shorter sentence, position {pad}: {pieces[1][pad]}\nblocked (0): a pad, hidden from "
                             "every query", BLOCKED)
    assert shown[0, 0][1] == ALLOWED
    assert re.findall(r'class="sentence-name"[^>]*>([^<]*)<', body) == ["your sentence", "a shorter sentence"]


def test_pieces_and_names_are_escaped():
    body = padding_mask_html(np.array([[True, False]]), ["<b>you</b>"], [["<img src=x>", "<pad>"]], "<script>")
    assert "<img" not in body and "<b>" not in body and "<script>" not in body and "<pad>" not in body
    assert mask_cells(body)[1] == [["<img src=x>", "<pad>"]]
