"""The one reading of a corpus (explorer/analyses/corpus/corpus.py) that the command line, Heads and Prune share."""

import pytest

from explorer.analyses.corpus.corpus import corpus_examples
from explorer.models.data import CorpusError

SOURCES = b"A dog runs.\nTwo men talk.\nA girl sings.\n"
REFERENCES = "Ein Hund rennt.\nZwei Männer reden.\nEin Mädchen singt.\n".encode()


def test_pairs_cut_to_the_limit_and_lines_alone():
    assert corpus_examples(SOURCES, "src.en", REFERENCES, "ref.de", limit=2) == (
        ["A dog runs.", "Two men talk."], ["Ein Hund rennt.", "Zwei Männer reden."])
    assert corpus_examples(SOURCES, "text.en") == (["A dog runs.", "Two men talk.", "A girl sings."], None)


@pytest.mark.parametrize("source, reference, message", [
    (SOURCES, REFERENCES[:16], "src.en has 3 lines but ref.de has 1"),     # not aligned
    (b"\n  \n", None, "src.en: no sentences"),                            # blank lines only
    (b"", None, "src.en: no sentences"),
])
def test_a_corpus_that_cannot_be_read_says_which_file(source, reference, message):
    with pytest.raises(CorpusError, match=message):
        corpus_examples(source, "src.en", reference, "ref.de")
