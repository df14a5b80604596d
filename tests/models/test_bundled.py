"""The shipped checkpoints: small, loadable, trained, and as good as their config.json says."""

import pytest
import torch

from explorer.heads import parse_heads
from explorer.translation import evaluate, translate
from models.checkpoint import load_checkpoint
from models.data import read_parallel
from tests.conftest import BUNDLED, MULTI30K, SHIPPED

SENTENCES = ["A dog runs through the grass.", "Two men are playing soccer on a field.",
             "A woman in a red dress is singing on a stage.", "The children are eating ice cream outside."]


def test_the_eight_head_model_is_shipped():
    assert 8 in SHIPPED


@pytest.mark.parametrize("heads", sorted(SHIPPED))
def test_bundled_checkpoint_is_complete_and_small(heads):
    folder = SHIPPED[heads]
    assert (folder / "model.safetensors").stat().st_size <= 25 * 2**20
    checkpoint = load_checkpoint(folder)
    config = checkpoint.model.config
    assert (config.heads, config.d_model, config.encoder_layers, config.decoder_layers, config.d_ff) == (heads, 256, 3, 3, 1024)
    assert 7500 <= config.vocab_size <= 8500
    assert len(checkpoint.frequencies["source"]) == config.vocab_size
    scores = checkpoint.info["scores"]["test_2016_flickr"]
    assert {"bleu_greedy", "bleu_beam5"} <= set(scores)
    assert checkpoint.info["training"]["steps"] == load_checkpoint(BUNDLED[8]).info["training"]["steps"]


def test_one_two_and_eight_heads_have_the_same_parameter_count():
    from models.transformer import Transformer, TransformerConfig

    counts = {heads: Transformer(TransformerConfig(heads=heads)).parameter_count() for heads in BUNDLED}
    counts.update({f"shipped {heads}": load_checkpoint(path).model.parameter_count() for heads, path in SHIPPED.items()})
    assert set(counts.values()) == {7_578_624}


def test_h8_translates(h8):
    translations = translate(h8, SENTENCES)
    assert "Hund" in translations[0]
    assert "Männer" in translations[1] and "Frau" in translations[2] and "Kinder" in translations[3]
    assert translate(h8, SENTENCES[:1], beam_size=5)[0].startswith("Ein")


def test_h8_meets_the_quality_floor_on_a_test_sample(h8):
    sources, references = read_parallel(MULTI30K / "test_2016_flickr.en.gz", MULTI30K / "test_2016_flickr.de.gz")
    result = evaluate(h8, sources[:200], references[:200])
    assert result["bleu"] >= 30
    assert h8.info["scores"]["test_2016_flickr"]["bleu_greedy"] >= 30


@pytest.mark.parametrize("spec", ["enc.0.*", "dec.2.*", "cross.1.*"])
def test_masking_every_head_of_a_layer_changes_the_output(h8, spec):
    from explorer.pruning import compare_steps

    pruned = parse_heads(spec, h8.model.config)
    for sentence, translation in zip(SENTENCES, translate(h8, SENTENCES)):
        ids = h8.tokenizer.encode_ids(translation)
        assert max(compare_steps(h8, sentence, ids, pruned).kl) > 1e-3  # every sentence's distributions move
    if spec != "dec.2.*":  # the translations themselves change too (decoder layer 2's self-attention alone is not enough)
        assert translate(h8, SENTENCES, pruned=pruned) != translate(h8, SENTENCES)


def test_masking_all_cross_attention_cuts_the_output_loose_from_the_source(h8):
    pruned = parse_heads("cross.*.*", h8.model.config)
    outputs = translate(h8, SENTENCES, pruned=pruned)
    assert len(set(outputs)) == 1  # with no path from the source, every sentence gets the same "translation"
