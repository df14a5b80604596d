"""Counts in words, for every message and title: defined in explorer/capture/wording.py (the bottom layer, so that
analyses and figures may use it too) and named here for the pages and the command line."""

from explorer.capture.wording import plural  # noqa: F401

# Said wherever heads are listed by name (enc.1.7), so a student need not guess what the numbers are.
HEAD_NAMING = ("A head is named kind.layer.head, counted from 0: enc.1.7 is encoder layer 1, head 7 (dec: the "
               "decoder's self-attention, cross: cross-attention).")
