"""Counts in words, for every message and title. In capture/, the bottom of explorer/'s layers, so that an
analysis's error message and a figure's title word counts alike without importing teaching/ (which sits above
them); explorer/teaching/wording.py hands the same function to the pages and the command line."""


def plural(count: int, noun: str) -> str:
    """'1 head', '8 heads'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
