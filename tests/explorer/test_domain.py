"""Familiarity with the training corpus: unigram log-perplexity against the corpus's own entropy."""

import math
from dataclasses import replace

import pytest

from explorer.capture.domain import OUT_OF_DOMAIN_MARGIN, familiarity, training_description


def test_a_sentence_of_common_pieces_is_familiar_and_one_of_unseen_pieces_is_not(tiny_checkpoint):
    tokenizer = tiny_checkpoint.tokenizer
    common = "a dog"
    counts = [0] * tokenizer.vocab_size
    for piece in tokenizer.encode_ids(common):
        counts[piece] = 1000
    checkpoint = replace(tiny_checkpoint, frequencies={"source": counts, "target": counts})
    familiar = familiarity(common, checkpoint)
    total = sum(counts) + len(counts)
    # Every piece of the sentence has count 1000: its cost is exactly −log(1001 / total).
    assert familiar.log_perplexity == pytest.approx(-math.log(1001 / total))
    assert familiar.entropy == pytest.approx(-math.log(1001 / total)) and not familiar.out_of_domain
    strange = familiarity("zebra quantum", checkpoint)
    assert strange.log_perplexity == pytest.approx(-math.log(1 / total))           # unseen pieces: add-one
    assert strange.log_perplexity > strange.entropy + OUT_OF_DOMAIN_MARGIN and strange.out_of_domain
    assert set(strange.unfamiliar) == {"zebra", "quantum"}
    assert strange.unfamiliar_share == 1.0


def test_a_familiar_sentence_does_not_hide_a_strange_one_beside_it(tiny_checkpoint):
    tokenizer = tiny_checkpoint.tokenizer
    counts = [0] * tokenizer.vocab_size
    for piece in tokenizer.encode_ids("a dog runs on the grass with a ball"):
        counts[piece] = 1000
    checkpoint = replace(tiny_checkpoint, frequencies={"source": counts, "target": counts})
    familiar = "A dog runs on the grass with a ball. " * 12
    alone = familiarity(familiar, checkpoint)
    assert not alone.out_of_domain and alone.farthest_log_perplexity <= alone.entropy + OUT_OF_DOMAIN_MARGIN
    mixed = familiarity(familiar + "Zebra quantum!", checkpoint)
    # The whole text's mean is dominated by its twelve familiar sentences; its last sentence alone is unseen pieces.
    assert mixed.log_perplexity < mixed.entropy + OUT_OF_DOMAIN_MARGIN
    assert mixed.farthest_sentence == "Zebra quantum!" and mixed.out_of_domain


def test_no_frequencies_no_verdict_and_no_data_no_description(tiny_checkpoint):
    assert familiarity("anything at all", replace(tiny_checkpoint, frequencies=None)) is None
    assert training_description(replace(tiny_checkpoint, info={})) == ""
    described = replace(tiny_checkpoint, info={"data": {"train": "explorer/data/multi30k/train.{en,de}.gz",
                                                        "train_pairs": 29000}})
    assert "29,000 Multi30k image captions" in training_description(described)
