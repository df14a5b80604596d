"""Counts in words, for every message and title: defined in explorer/capture/wording.py (the bottom layer, so that
analyses and figures may use it too) and named here for the pages and the command line."""

from explorer.capture.wording import plural  # noqa: F401
