"""Head roles on constructed attention where the answer is known."""

import numpy as np
import pytest
import torch

from explorer.analyses.corpus.head_tallies import SyntaxTally, Tally, key_counts, real_tokens, tally_patterns, tally_syntax
from explorer.analyses.corpus.roles import Thresholds, analyse_roles, classify, head_results, is_real_sentence, role_summary
from explorer.capture.treebank import read_trees, word_attention, word_maps
from explorer.models.data import pad_batch
from explorer.models.hooks import model_run
from explorer.models.tokenizer import BOS, EOS, PAD
from explorer.models.vocabulary import attention_hook
from tests.conftest import DATA

EWT = DATA / "ud" / "en_ewt-ud-dev.conllu.gz"
SPECIAL = frozenset((PAD, BOS, EOS))          # our models' special tokens


def real(ids: torch.Tensor) -> torch.Tensor:
    return real_tokens(ids, ids != PAD, SPECIAL)


def counts_of(ids: torch.Tensor, frequencies: list[int]) -> torch.Tensor:
    return key_counts(ids, real(ids), torch.tensor(frequencies, dtype=torch.float64))
ONE_LEFT, GOLD_ARCS, RAREST = 0, 1, 2


@pytest.fixture(scope="module")
def sentences(tiny_checkpoint):
    trees = read_trees(EWT, limit=900)
    aligned = [(t, tiny_checkpoint.align_words(t.words, t.space_after)) for t in trees]
    return [(t, a) for t, a in aligned if a is not None]


def one_left(length: int) -> np.ndarray:
    pattern = np.zeros((length, length))
    pattern[0, 0] = 1
    pattern[np.arange(1, length), np.arange(length - 1)] = 1
    return pattern


def constructed_patterns(tree, aligned, rarest_position: int) -> np.ndarray:
    """[1 layer, 3 heads, P, P]: one-left; every piece of a word → the first piece of its gold head; → rarest."""
    pieces = len(aligned.ids)
    patterns = np.zeros((1, 3, pieces, pieces))
    patterns[0, ONE_LEFT] = one_left(pieces)
    for word, piece_list in enumerate(aligned.word_pieces):
        head = tree.heads[word]
        target = aligned.word_pieces[head][0] if head >= 0 else piece_list[0]
        patterns[0, GOLD_ARCS, piece_list, target] = 1
    patterns[0, GOLD_ARCS, pieces - 1, pieces - 1] = 1  # EOS attends to itself
    patterns[0, RAREST, :, rarest_position] = 1
    return patterns


@pytest.mark.slow
def test_constructed_heads_get_exactly_their_roles(sentences, tiny_checkpoint):
    frequencies = list(range(1000, 1000 - tiny_checkpoint.tokenizer.vocab_size, -1))  # higher id = rarer
    tally, syntax = Tally(1, 3), SyntaxTally()
    for start in range(0, len(sentences), 32):
        chunk = sentences[start: start + 32]
        src = pad_batch([a.ids for _, a in chunk])
        counts = counts_of(src, frequencies)
        rare = counts.argmin(-1)
        batch = np.zeros((len(chunk), 1, 3, src.shape[1], src.shape[1]))
        for row, (tree, aligned) in enumerate(chunk):
            pieces = len(aligned.ids)
            batch[row, :, :, :pieces, :pieces] = constructed_patterns(tree, aligned, int(rare[row]))
        patterns = torch.tensor(batch, dtype=torch.float32)
        tally_patterns(tally, patterns, real(src), src != PAD, counts, positional=True)
        tally_syntax(syntax, batch, chunk)
    results = {h["head"]: h for h in head_results("encoder", tally, (syntax, SyntaxTally()), Thresholds(),
                                                  [t.text for t, _ in sentences])}

    left = results[ONE_LEFT]
    assert left["roles"] == ["positional"] and left["positional"]["offset"] == -1
    # Only the first piece of each sentence cannot look left; the </s> query is not counted at all.
    firsts = len(sentences) / sum(len(a.ids) - 1 for _, a in sentences)
    assert left["positional"]["share"] == pytest.approx(1 - firsts, abs=1e-4) and left["syntactic_relations"] == []
    # Its sentence-bootstrap interval: around the share, and narrow where every sentence looks left.
    assert left["positional"]["low"] <= left["positional"]["share"] <= left["positional"]["high"]
    assert left["positional"]["high"] - left["positional"]["low"] < 0.02

    gold = results[GOLD_ARCS]
    assert "syntactic" in gold["roles"] and "positional" not in gold["roles"]
    for relation in ("nsubj", "obj", "amod", "advmod", "det", "nmod", "case", "compound"):
        score = gold["syntactic"][relation]["dependent→head"]
        assert score["accuracy"] == 1.0 and score["count"] >= 100 and score["baseline"] < 0.9
        assert f"{relation} dependent→head" in gold["syntactic_relations"]

    rare = results[RAREST]
    assert rare["roles"] == ["rare-token"] and rare["rare_token"]["rate"] == 1.0
    # Chance: the (tied) rarest pieces over the real pieces; </s> never counts as a key that could be rarest.
    pieces = [a.ids[:-1] for _, a in sentences if len(a.ids) - 1 >= 2]
    chance = np.mean([p.count(max(p)) / len(p) for p in pieces])
    top2 = np.mean([sum(i >= sorted(p)[-2] for i in p) / len(p) for p in pieces])
    assert rare["rare_token"]["chance"] == pytest.approx(chance, abs=1e-4)
    assert rare["rare_token"]["rate_top2"] == 1.0 and rare["rare_token"]["chance_top2"] == pytest.approx(top2, abs=1e-4)
    assert left["rare_token"]["rate"] < 0.3 and gold["rare_token"]["rate"] < 0.5


def test_thresholds_are_parameters():
    entry = {"positional": {"offset": -1, "share": 0.85},
             "syntactic": {"nsubj": {"dependent→head": {"accuracy": 0.6, "baseline": 0.45, "count": 150}}},
             "rare_token": {"rate": 0.4, "chance": 0.07}}
    assert classify(entry, Thresholds()) == (["syntactic"], ["nsubj dependent→head"])
    assert classify(entry, Thresholds(positional=0.8, rare_rate=0.3))[0] == ["positional", "syntactic", "rare-token"]
    assert classify(entry, Thresholds(syntactic_margin=0.2))[0] == []
    assert classify(entry, Thresholds(syntactic_min_count=200))[0] == []
    assert classify(entry, Thresholds(rare_rate=0.3, rare_over_chance=6))[0] == ["syntactic"]


def test_role_summary_counts_roles_and_names_the_strongest_candidates():
    def head(spec, roles, share, offset, rate, accuracy):
        return {"spec": spec, "roles": roles, "confidence": 0.5, "positional": {"share": share, "offset": offset},
                "rare_token": {"rate": rate, "chance": 0.1},
                "syntactic": {"amod": {"dependent→head": {"accuracy": accuracy, "baseline": 0.5, "count": 200}}}}

    summary = role_summary([head("enc.0.0", ["positional"], 0.95, -1, 0.2, 0.4),
                            head("enc.0.1", ["syntactic", "rare-token"], 0.3, 0, 0.6, 0.7),
                            head("enc.1.0", [], 0.5, 2, 0.1, 0.3)])
    assert (summary["heads"], summary["positional"], summary["syntactic"], summary["rare-token"], summary["no role"]) \
        == (3, 1, 1, 1, 1)
    assert summary["most positional"] == "enc.0.0 (95% at -1)"
    assert summary["most rare-token"] == "enc.0.1 (60%, chance 10%)"
    assert summary["most syntactic"] == "enc.0.1 amod dependent→head (70%, +20% vs baseline)"
    assert role_summary([])["most positional"] is None


def test_word_piece_mapping_on_words_split_into_many_pieces(tiny_checkpoint):
    words = ["Antidisestablishmentarianism", "is", "extraordinarily", "long"]
    aligned = tiny_checkpoint.align_words(words)
    lengths = [len(p) for p in aligned.word_pieces]
    assert lengths[0] >= 5 and lengths[2] >= 3 and sum(lengths) + 1 == len(aligned.ids)
    assert [p for pieces in aligned.word_pieces for p in pieces] == list(range(sum(lengths)))
    pieces = len(aligned.ids)
    rng = np.random.default_rng(0)
    pattern = rng.random((pieces, pieces))
    pattern /= pattern.sum(-1, keepdims=True)
    words_attention = word_attention(pattern, aligned.word_pieces)
    first, third = aligned.word_pieces[0], aligned.word_pieces[2]
    # From a word: the mean over its pieces; to a word: the sum over its pieces.
    assert np.isclose(words_attention[0, 2], pattern[np.ix_(first, third)].sum(1).mean())
    # EOS stays a unit of its own, after the words: every unit's row keeps all of its weight, and a word's
    # weight on EOS is the mean of its pieces' (an argmax over words alone would credit EOS's runner-up).
    assert words_attention.shape == (len(words) + 1, len(words) + 1)
    np.testing.assert_allclose(words_attention.sum(-1), 1)
    np.testing.assert_allclose(words_attention[:4, 4], [pattern[p, -1].mean() for p in aligned.word_pieces])
    source, target = word_maps(aligned.word_pieces, pieces)
    np.testing.assert_allclose(source.sum(-1), 1)
    np.testing.assert_allclose(target.sum(0), lengths)


@pytest.mark.slow
def test_a_planted_positional_head_is_found_by_the_whole_pipeline(tiny_checkpoint):
    """Replace encoder layer 1, head 3 by 'look one token left' through a hook; analyse_roles must find it."""
    def look_left(pattern, name):
        planted = pattern.clone()
        length = pattern.shape[-1]
        planted[:, 3] = torch.tensor(one_left(length), dtype=pattern.dtype)
        return planted

    trees = read_trees(EWT, limit=60)
    with model_run({attention_hook("encoder", 1, "pattern"): look_left}, hook_names=tiny_checkpoint.model.hook_names):
        report = analyse_roles(tiny_checkpoint, trees=trees, kinds=("encoder",))
    found = {h["spec"]: h for h in report.heads}
    # Padding rows of shorter sentences also look left, but only real query tokens are counted.
    assert "positional" in found["enc.1.3"]["roles"] and found["enc.1.3"]["positional"]["offset"] == -1
    assert all("positional" not in h["roles"] for spec, h in found.items() if spec != "enc.1.3")
    assert report.corpus["treebank"]["sentences"] + report.corpus["treebank"]["skipped"] == 60
    assert len(found["enc.1.3"]["examples"]) == 3


def pattern_batch(rows: list[np.ndarray]) -> torch.Tensor:
    """[B, 1 layer, 1 head, Q, K] from one [Q, K] pattern per sentence."""
    return torch.tensor(np.stack(rows)[:, None, None], dtype=torch.float32)


def test_special_token_queries_are_left_out():
    """</s> in the encoder and <s> in the decoder: their rows never count, whatever they look at."""
    src = torch.tensor([[10, 11, 12, 13, EOS]])
    pattern = one_left(5)
    pattern[4] = 0
    pattern[4, 0] = 1                                  # </s> looks far left: would be an offset of −4
    tally = Tally(1, 1)
    tally_patterns(tally, pattern_batch([pattern]), real(src), src != PAD, None, positional=True)
    entry = head_results("encoder", tally, None, Thresholds(), ["x"])[0]
    assert tally.queries == 4 and entry["positional"]["share"] == 0.75 and entry["positional"]["histogram"]["-4"] == 0
    assert entry["confidence"] == 1.0

    tgt = torch.tensor([[BOS, 20, 21, 22]])
    causal = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]     # uniform over the visible prefix
    tally = Tally(1, 1)
    tally_patterns(tally, pattern_batch([causal]), real(tgt), tgt != PAD, None, positional=True)
    entry = head_results("decoder", tally, None, Thresholds(), ["x"])[0]
    # <s> has one key and always scores 1.0: left out, the mean of the largest weights is (1/2 + 1/3 + 1/4) / 3.
    assert tally.queries == 3 and entry["confidence"] == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3, abs=1e-4)


def test_rare_token_ties_count_as_hits_and_chance_counts_only_keys_that_can_be_rarest():
    frequencies = [1000] * 50
    frequencies[11] = frequencies[12] = 5          # two pieces tied for rarest
    frequencies[13] = 7                            # the next rarest

    def rare_scores(ids: list[int], peak: int) -> dict:
        """One sentence, one head whose every query looks at key `peak`."""
        src = torch.tensor([ids])
        pattern = np.zeros((len(ids), len(ids)))
        pattern[:, peak] = 1
        tally = Tally(1, 1)
        tally_patterns(tally, pattern_batch([pattern]), real(src), src != PAD, counts_of(src, frequencies),
                       positional=False)
        return head_results("cross", tally, None, Thresholds(), ["x"])[0]["rare_token"]

    tied = [10, 11, 12, 13, 14, EOS]                # 11 and 12 tie for rarest among 5 pieces; </s> never can be
    for peak in (1, 2):
        assert rare_scores(tied, peak) | {"sentences": 1} == {"rate": 1.0, "chance": 0.4, "rate_top2": 1.0,
                                                              "chance_top2": 0.4, "sentences": 1}
    assert rare_scores(tied, 3)["rate"] == 0.0 and rare_scores(tied, 5)["rate"] == 0.0   # 13, and </s>
    distinct = [13, 10, 11, 14, EOS]                # rarest 11, second rarest 13
    assert rare_scores(distinct, 2) | {"sentences": 1} == {"rate": 1.0, "chance": 0.25, "rate_top2": 1.0,
                                                           "chance_top2": 0.5, "sentences": 1}
    assert (rare_scores(distinct, 0)["rate"], rare_scores(distinct, 0)["rate_top2"]) == (0.0, 1.0)
    assert "rare_token" not in head_results("cross", Tally(1, 1), None, Thresholds(), ["x"])[0]
    # A sentence with one piece has no choice to make: it is not counted.
    src = torch.tensor([[11, EOS]])
    tally = Tally(1, 1)
    tally_patterns(tally, pattern_batch([np.eye(2)]), real(src), src != PAD, counts_of(src, frequencies), False)
    assert tally.rare_sentences == 0


def test_typical_sentences_are_real_sentences():
    assert is_real_sentence("A man in a blue shirt is standing on a ladder.")
    for junk in ("A ++", "•••", "- - - - - -", "1 2 3 4 5 6", "Hi there"):
        assert not is_real_sentence(junk)


def test_roles_on_plain_text_and_syntax_on_the_treebank(tiny_checkpoint):
    trees = read_trees(EWT, limit=40)
    texts = ["A man in a blue shirt is standing on a ladder.", "•••", "", "Two dogs play in the snow with a ball."]
    report = analyse_roles(tiny_checkpoint, texts, trees, text_name="captions", treebank_name="ewt")
    assert report.corpus["text"] == {"name": "captions", "sentences": 3, "skipped": 1, "rare_common_top": 500}
    assert report.corpus["treebank"]["sentences"] + report.corpus["treebank"]["skipped"] == 40
    assert 0 < report.corpus["treebank"]["short_sentences"] < report.corpus["treebank"]["sentences"]
    encoder = [h for h in report.heads if h["kind"] == "encoder"]
    assert all("syntactic" in h and "syntactic_short" in h for h in encoder)
    assert all("syntactic" not in h for h in report.heads if h["kind"] != "encoder")
    assert all(set(h["examples"]) <= set(texts[::3]) for h in report.heads)
