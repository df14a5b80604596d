"""The attention papers' cards (explorer/papers/cards/attention_papers.py) and their measurements
(explorer/analyses/corpus/permutation.py, explorer/analyses/sentence/layer_shares.py), on answers known by
construction: a permuted row keeps its weights and its masked zeros; a model whose every attention row is uniform
cannot be changed by permuting; the special-token shares of a planted pattern against a hand computation; each card's
numbers equal the functions' outputs; every Hugging Face family gets a card."""

import numpy as np
import pytest
import torch

from explorer.analyses.corpus.permutation import pattern_hooks, permutation_effect, permuted, permuting, uniform
from explorer.analyses.sentence.faithfulness import faithfulness_tallies, summary
from explorer.analyses.sentence.layer_shares import layer_shares, sentence_layer_shares
from explorer.analyses.sentence.norms import punctuation
from explorer.capture.trace import trace_sentence
from explorer.models.data import read_lines
from explorer.models.hooks import capture, model_run
from explorer.models.interface import Embeds
from explorer.models.loader import open_model
from explorer.models.vocabulary import attention_hook
from explorer.papers.bench import NOT_MEASURABLE, VERDICTS, Budget
from explorer.papers.cards import PAPERS
from explorer.papers.cards.attention_papers import MULTI30K, TEST, VAL, upper_layers
from tests.conftest import SENTENCES
from tests.hugging_face_models import FAMILIES, saved_model

NAMES = ["abnar_zuidema", "kobayashi", "xiao", "jain_wallace"]


def test_registered_in_order():
    assert [name for name in PAPERS if name in NAMES] == NAMES


def test_permuted_row_keeps_its_weights_and_masked_zeros():
    generator = torch.Generator().manual_seed(1)
    scores = torch.randn(2, 3, 5, 7, generator=generator)
    allowed = torch.ones(5, 7, dtype=torch.bool).tril(2).expand(2, 3, 5, 7).clone()
    allowed[1, :, :, 5:] = False                                    # padding keys of the second sentence
    pattern = torch.softmax(scores.masked_fill(~allowed, -torch.inf), -1)
    shuffled = permuted(pattern, allowed, generator)
    assert torch.all(shuffled[~allowed] == 0)
    assert torch.allclose(shuffled.sum(-1), torch.ones(2, 3, 5))
    for index in np.ndindex(2, 3, 5):
        keep = allowed[index]
        assert torch.equal(shuffled[index][keep].sort().values, pattern[index][keep].sort().values)
    assert not torch.equal(shuffled, pattern)                       # it did permute


def test_permutation_hook_in_a_model_keeps_each_row(tiny_checkpoint):
    """Every kind's pattern just before and just after the hook, in the same call: the same multiset per row,
    zeros wherever the model's own mask hid a key (the decoder's future, padding)."""
    model = tiny_checkpoint
    before = {}

    def record(value, name):
        before[name] = value.clone()

    names = [attention_hook(kind, layer, "pattern") for kind in model.kinds for layer in range(model.layers(kind))]
    source = model.pad([model.encode(SENTENCES[1]).ids, model.encode(SENTENCES[0]).ids])
    target = model.pad([[model.start_id, 5, 6, 7], [model.start_id, 8]])
    hooks, _ = permuting(model, list(model.kinds), seed=3)
    with model_run(hooks={name: record for name in names}, hook_names=model.hook_names), \
            model_run(hooks=hooks, hook_names=model.hook_names), capture(model.hook_names, names) as after, \
            torch.no_grad():
        model.forward(source, target)
    for name in names:
        old, new = before[name], after[name]
        assert torch.all(new[old == 0] == 0)
        assert torch.allclose(new.sort(-1).values, old.sort(-1).values)
        assert not torch.equal(new, old)
    decoder = after[attention_hook("decoder", 0, "pattern")]
    assert torch.all(decoder.triu(1) == 0)                          # no query sees its future


@pytest.mark.slow
def test_uniform_attention_cannot_be_changed_by_permutation(tiny_checkpoint):
    model = tiny_checkpoint
    with model_run(hooks=pattern_hooks(model, list(model.kinds), uniform), hook_names=model.hook_names):
        result = permutation_effect(model, SENTENCES[:3])
    for kind, entry in result["kinds"].items():
        assert entry["tv_mean"] == 0.0 and entry["tv_median_sentence"] == 0.0, kind
        assert entry["top1_agreement"] == 1.0 and entry["bleu"] == 100.0, kind
    plain = permutation_effect(model, SENTENCES[:3])                # a real pattern does move the output
    assert max(entry["tv_mean"] for entry in plain["kinds"].values()) > 0


def test_special_token_shares_by_hand(tiny_checkpoint):
    """A planted pattern and norm on a real trace's encoder: the share on special tokens and punctuation, by
    weight and by norm, and on the first token, computed loop by loop."""
    model = tiny_checkpoint
    trace = trace_sentence(model, "A dog, a cat.", fix_casing=False)
    values = trace.attention["encoder"]
    layers, heads, queries, keys = values.pattern.shape
    rng = np.random.default_rng(0)
    pattern = rng.dirichlet(np.ones(keys), size=(layers, heads, queries))
    lengths = rng.uniform(0.1, 3.0, size=(layers, heads, 1, keys))
    values.pattern, values.norm = pattern, pattern * lengths
    sinks = [position for position, (token, piece) in enumerate(zip(trace.source_ids, trace.source_tokens))
             if token in model.special_ids or punctuation(piece)]
    assert len(sinks) >= 3                                          # ",", "." and </s>
    shares = sentence_layer_shares(model, trace)["encoder"]
    for layer in range(layers):
        weight = norm = first = 0.0
        for head in range(heads):
            for query in range(queries):
                row, lengths_row = pattern[layer, head, query], values.value("norm")[layer, head, query]
                weight += sum(row[key] for key in sinks)
                norm += sum(lengths_row[key] for key in sinks) / sum(lengths_row)
                first += row[0]
        assert shares["weight"][layer] == pytest.approx(weight / (heads * queries))
        assert shares["norm"][layer] == pytest.approx(norm / (heads * queries))
        assert shares["first"][layer] == pytest.approx(first / (heads * queries))
        assert shares["chance"][layer] == pytest.approx(len(sinks) / keys)
        assert shares["first_chance"][layer] == pytest.approx(1 / keys)


def test_upper_layers_follow_the_paper():
    assert upper_layers(32) == list(range(2, 32))
    assert upper_layers(3) == [2] and upper_layers(2) == [1]


@pytest.mark.slow
def test_card_numbers_are_the_functions_outputs(tiny_checkpoint):
    model, budget = tiny_checkpoint, Budget(sentences=4)
    test = read_lines(MULTI30K / TEST)[:4]
    val = read_lines(MULTI30K / VAL)[:4]
    cards = {name: PAPERS[name](model, budget) for name in NAMES}
    assert cards["abnar_zuidema"].numbers == summary(faithfulness_tallies(model, test))
    assert "--limit 4" in cards["abnar_zuidema"].command
    shares = layer_shares(model, val)
    kobayashi = cards["kobayashi"].numbers
    for kind, values in shares["kinds"].items():
        assert kobayashi["kinds"][kind] == {name: values[name] for name in ("weight", "norm", "chance")}
    every = [share for values in shares["kinds"].values() for share in values["weight"]]
    assert kobayashi["weight"] == pytest.approx(np.mean(every), abs=1e-4)
    chance = [share for values in shares["kinds"].values() for share in values["chance"]]
    assert kobayashi["uniform"] == pytest.approx(np.mean(chance), abs=1e-4)
    xiao = cards["xiao"].numbers
    assert xiao["first_token_share"] == shares["kinds"]["decoder"]["first"]
    assert xiao["uniform"] == shares["kinds"]["decoder"]["first_chance"][0]
    # a random model: blanking its most important token moves its output < 0.05 TV, so the card declines
    blanked = permutation_effect(model, test)["leave_one_out"]["tv_median_sentence"]
    assert blanked < 0.05 and cards["jain_wallace"].verdict == NOT_MEASURABLE
    assert f"median {blanked:.2f} TV" in cards["jain_wallace"].rule
    for name, card in cards.items():
        if name == "jain_wallace":
            continue
        assert card.verdict in VERDICTS and card.verdict != NOT_MEASURABLE, name
        assert card.ours and card.command.startswith("python -m explorer"), name


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_gets_a_card(family, tmp_path_factory):
    model = open_model(saved_model(family, tmp_path_factory))
    for name in NAMES:
        card = PAPERS[name](model, Budget(sentences=4))
        assert card.verdict in VERDICTS, (family, name)
        if name == "xiao" and not model.has("decoder"):
            assert card.verdict == NOT_MEASURABLE and "has no causal self-attention" in card.rule
        elif name == "jain_wallace" and isinstance(model, Embeds):      # no output distribution to permute against
            assert card.verdict == NOT_MEASURABLE and "has no output distribution over tokens" in card.rule
        elif name == "jain_wallace":        # a random model's output ignores its input: permuting shows nothing
            assert card.verdict == NOT_MEASURABLE and "hardly depends on its input" in card.rule, (family, card.rule)
        else:
            assert card.verdict != NOT_MEASURABLE and card.numbers, (family, name, card.rule)
