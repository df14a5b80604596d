"""Roles as close to Voita et al. 2019 as the data allows: a treebank sentence is read as written and tokenized once
(models/word_alignment.py), </s> stays a key a head can pick, and rare-token hits count only in sentences whose
rarest token is not among the 500 most frequent (§5.3)."""

import numpy as np
import pytest
import torch

from explorer.analyses.corpus.head_tallies import (
    SyntaxTally,
    Tally,
    common_count,
    key_counts,
    real_tokens,
    tally_patterns,
    tally_syntax,
)
from explorer.analyses.corpus.roles import analyse_roles
from explorer.capture.treebank import Tree, read_trees, word_attention
from explorer.models.data import pad_batch
from explorer.models.tokenizer import BOS, EOS, PAD
from explorer.models.word_alignment import pieces_of_words, sentence_text, spans_by_matching
from tests.conftest import DATA

EWT = DATA / "ud" / "en_ewt-ud-dev.conllu.gz"


def test_a_piece_belongs_to_the_words_it_overlaps_and_a_lone_space_to_the_next_word():
    text, words = sentence_text(["They", "did", "n't", "go", "."], [True, False, True, False, False])
    assert text == "They didn't go." and words == [(0, 4), (5, 8), (8, 11), (12, 14), (14, 15)]
    #            "They"   " di"   "dn"  "'t"     " "      "go"      "."    </s>
    pieces = [(0, 4), (4, 7), (7, 9), (9, 11), (11, 12), (12, 14), (14, 15), None]
    assert pieces_of_words(words, pieces) == [[0], [1, 2], [2, 3], [4, 5], [6]]
    assert pieces_of_words(words, pieces[:3] + [None] * 5) is None          # a word without a piece
    assert spans_by_matching(text, ["▁They", "▁di", "d", "n", "'", "t", "▁", "go", ".", None]) == [
        (0, 4), (4, 7), (7, 8), (8, 9), (9, 10), (10, 11), (11, 12), (12, 14), (14, 15), None]
    assert spans_by_matching(text, ["▁They", "<unk>"]) is None


@pytest.fixture(scope="module")
def trees():
    return read_trees(EWT, limit=300)


def test_treebank_sentences_are_read_as_written_and_tokenized_once(h8, trees):
    """The ids equal the encoder's own reading of the written sentence; every piece but </s> belongs to a word;
    reading "did" and "n't" apart (the old way) makes more pieces than the model ever sees."""
    whole = separate = 0
    for tree in trees:
        aligned = h8.align_words(tree.words, tree.space_after)
        assert aligned is not None and aligned.ids == h8.encode(tree.text).ids
        assert sorted({p for pieces in aligned.word_pieces for p in pieces}) == list(range(len(aligned.ids) - 1))
        whole += len(aligned.ids)
        separate += sum(len(h8.tokenizer.encode_ids(word)) for word in tree.words) + 1
    assert "didn't" in " ".join(t.text for t in trees) and whole < 0.97 * separate


def test_a_head_whose_largest_weight_is_on_the_end_token_misses_the_arc(h8, trees):
    """Every word puts 0.6 on </s> and 0.4 on its gold head: no arc is found (an argmax over the words alone would
    find all of them); with 0.4 and 0.6 every arc is found."""
    usable = [(t, h8.align_words(t.words, t.space_after)) for t in trees[:60]]
    accuracy = {}
    for on_end in (0.6, 0.4):
        syntax = SyntaxTally()
        for tree, aligned in usable:
            pieces = len(aligned.ids)
            pattern = np.zeros((1, 1, pieces, pieces))
            pattern[0, 0, :, pieces - 1] = on_end
            for word, positions in enumerate(aligned.word_pieces):
                head = tree.heads[word]
                target = aligned.word_pieces[head][0] if head >= 0 else pieces - 1
                pattern[0, 0, positions, target] += 1 - on_end
            tally_syntax(syntax, pattern[None], [(tree, aligned)])
        accuracy[on_end] = {key: float(hits[0, 0]) / syntax.counts[key] for key, hits in syntax.hits.items()
                            if key[1] == "dependent→head"}
    assert accuracy[0.6] and set(accuracy[0.6].values()) == {0.0}
    assert set(accuracy[0.4].values()) == {1.0}


def test_rare_token_hits_count_only_in_sentences_whose_rarest_token_is_not_among_the_500_most_frequent():
    vocabulary = 2000
    frequencies = torch.arange(vocabulary, 0, -1, dtype=torch.float64)   # higher id = rarer; ids < 500 the top 500
    assert common_count(frequencies, 500) == frequencies[499]
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(4, 900, size=int(rng.integers(3, 12)))) + [EOS] for _ in range(200)]
    ids = pad_batch(rows)
    real = real_tokens(ids, ids != PAD, frozenset((PAD, BOS, EOS)))
    counts = key_counts(ids, real, frequencies)
    patterns = torch.zeros(len(rows), 1, 1, ids.shape[1], ids.shape[1])
    patterns[torch.arange(len(rows)), :, :, :, counts.argmin(-1)] = 1        # a head that always finds the rarest
    for top, expected in ((500, sum(max(row[:-1]) >= 500 for row in rows)), (0, len(rows))):
        tally = Tally(1, 1)
        tally_patterns(tally, patterns, real, ids != PAD, counts, False, common_count(frequencies, top))
        assert tally.rare_sentences == expected and tally.rare_hits[0, 0] == expected
    assert 0 < sum(max(row[:-1]) >= 500 for row in rows) < len(rows)


def test_with_fewer_than_500_distinct_tokens_every_token_is_among_the_most_frequent():
    assert common_count(torch.tensor([5.0, 3.0, 0.0, 0.0]), 3) == 1.0            # the third most frequent is unseen
    assert common_count(torch.tensor([5.0, 3.0, 2.0, 0.0]), 3) == 2.0
    assert common_count(torch.tensor([5.0, 3.0]), 0) == float("-inf")


@pytest.mark.slow
def test_the_roles_report_says_which_filter_made_its_rare_token_counts(h8, trees):
    everyday = ["A man is in the water.", "Two dogs are on the street.", "A woman and a man."]   # common tokens only
    sentences = [tree.text for tree in trees[:60]] + everyday
    kept = {top: analyse_roles(h8, sentences, kinds=("encoder",), common_top=top) for top in (0, 500)}
    assert [kept[top].corpus["text"]["rare_common_top"] for top in (0, 500)] == [0, 500]
    counted = {top: kept[top].heads[0]["rare_token"]["sentences"] for top in (0, 500)}
    frequencies = sorted(h8.token_frequencies["source"], reverse=True)        # the training corpus's counts
    rarest = [min(h8.token_frequencies["source"][i] for i in h8.encode(s).ids[:-1]) for s in sentences]
    assert counted[0] == len(sentences)
    assert 0 < counted[500] == sum(count < frequencies[499] for count in rarest) < len(sentences)


def test_a_tree_knows_where_the_treebank_writes_no_space(trees):
    contracted = next(tree for tree in trees if "n't" in tree.words and not tree.space_after[tree.words.index("n't") - 1])
    at = contracted.words.index("n't")
    assert f"{contracted.words[at - 1]}n't" in contracted.text
    assert Tree(["a", "b"], [-1, 0], ["root", "dep"]).text == "a b"


def test_clark_leaves_the_special_tokens_out_of_the_argmax_and_voita_keeps_them():
    """Clark et al.'s code drops [CLS] and [SEP] (attn[1:-1, 1:-1]); Voita et al.'s token argmax keeps </s>."""
    pattern = np.array([[0.2, 0.1, 0.7],          # word 0 (piece 0) puts most on </s> (piece 2), then word 0 itself
                        [0.5, 0.1, 0.4],
                        [0.3, 0.3, 0.4]])
    kept = word_attention(pattern, [[0], [1]])
    dropped = word_attention(pattern, [[0], [1]], keep_special=False)
    assert kept.shape == (3, 3) and dropped.shape == (2, 2)
    assert kept[0].argmax() == 2 and dropped[0].argmax() == 0
    np.testing.assert_allclose(dropped, pattern[:2, :2])
