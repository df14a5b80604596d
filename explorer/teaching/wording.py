"""Counts in words, for every message and title."""


def plural(count: int, noun: str) -> str:
    """'1 head', '8 heads'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
