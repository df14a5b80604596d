"""A corpus as every corpus analysis reads it, written once for the command line, the Heads page and the Prune
page: a translation model's source lines with their aligned references, a language model's lines alone, the first
`limit` of them, and never none. Files come as bytes (an upload, or a path's contents) with the name errors say."""

from __future__ import annotations

from explorer.models.data import CorpusError, aligned, lines_of


def corpus_examples(source: bytes, source_name: str, reference: bytes | None = None, reference_name: str = "",
                    limit: int | None = None) -> tuple[list[str], list[str] | None]:
    """The source lines (and, given reference bytes, the aligned reference lines), the first `limit` of them; a
    CorpusError naming the file when the lines do not align or none holds a sentence."""
    return corpus_of_lines(lines_of(source, source_name), source_name,
                           lines_of(reference, reference_name) if reference is not None else None, reference_name,
                           limit)


def corpus_of_lines(sources: list[str], source_name: str, references: list[str] | None = None,
                    reference_name: str = "", limit: int | None = None) -> tuple[list[str], list[str] | None]:
    """corpus_examples for lines already read (a notebook's lists: explorer/studies.py)."""
    if references is not None:
        sources, references = aligned(sources, references, source_name, reference_name)
    if limit:
        sources = sources[:limit]
        references = references[:limit] if references is not None else None
    if not any(line.strip() for line in sources):
        raise CorpusError(f"{source_name}: no sentences")
    return sources, references
