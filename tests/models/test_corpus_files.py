"""Corpus files as a person gives them, by path or as uploaded bytes: plain or gzip, errors naming their file."""

import gzip

import pytest

from explorer.capture.treebank import read_trees, trees_of
from explorer.models.data import CorpusError, aligned, lines_of, read_lines, read_parallel

TREE = "1\tA\ta\tDET\t_\t_\t2\tdet\t_\t_\n2\tdog\tdog\tNOUN\t_\t_\t0\troot\t_\t_\n\n"


@pytest.mark.parametrize("data, lines", [(b"A dog.\nTwo cats.\n", ["A dog.", "Two cats."]),
                                         (b"A dog.\r\nTwo cats.", ["A dog.", "Two cats."]),
                                         (b"A dog.\n\n", ["A dog.", ""]), (b"", [])])
def test_lines_of_plain_and_gzip_bytes_are_the_same(data, lines):
    assert lines_of(data, "mine.txt") == lines_of(gzip.compress(data), "mine.txt") == lines
    assert lines_of(gzip.compress(data), "upload-without-.gz-name") == lines        # told apart by magic bytes


def test_reading_by_path_matches_reading_bytes(tmp_path):
    plain, packed = tmp_path / "en.txt", tmp_path / "de.txt.gz"
    plain.write_bytes(b"A dog.\nTwo cats.\n")
    packed.write_bytes(gzip.compress(b"Ein Hund.\nZwei Katzen.\n"))
    assert read_parallel(plain, packed) == (["A dog.", "Two cats."], ["Ein Hund.", "Zwei Katzen."])
    assert read_lines(plain) == lines_of(plain.read_bytes(), "x")


@pytest.mark.parametrize("data, message", [(b"\xff\xfe bad", "mine.txt: not a readable UTF-8 text file"),
                                           (b"\x1f\x8b not really gzip", "mine.txt: not a readable UTF-8 text file")])
def test_unreadable_bytes_name_the_persons_file(data, message):
    with pytest.raises(CorpusError, match=message):
        lines_of(data, "mine.txt")


def test_missing_folder_and_misaligned_files_are_named(tmp_path):
    with pytest.raises(CorpusError, match="nowhere.txt: no such file"):
        read_lines(tmp_path / "nowhere.txt")
    with pytest.raises(CorpusError, match="is a folder"):
        read_trees(tmp_path)
    with pytest.raises(CorpusError, match="en.txt has 2 lines but de.txt has 1"):
        aligned(["a", "b"], ["c"], "en.txt", "de.txt")


def test_trees_from_plain_or_gzip_bytes(tmp_path):
    trees = trees_of(gzip.compress(TREE.encode()), "upload")
    assert trees == trees_of(TREE.encode(), "upload")
    assert (trees[0].words, trees[0].heads, trees[0].relations) == (["A", "dog"], [1, -1], ["det", "root"])
    with pytest.raises(CorpusError, match="mine.conllu: not a readable CoNLL-U file"):
        trees_of(b"just words\n", "mine.conllu")
    with pytest.raises(CorpusError, match="mine.conllu: no sentences with dependency trees"):
        trees_of(b"# only a comment\n", "mine.conllu")
