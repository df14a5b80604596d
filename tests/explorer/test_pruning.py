"""Pruning: nothing pruned changes nothing; no cross-attention cuts the source off; importance beats random."""

import threading

import numpy as np
import pytest
import torch

from explorer.analyses.corpus.corpus_scoring import TranslationScorer
from explorer.analyses.corpus.head_table import head_table, heads_without_role
from explorer.analyses.corpus.importance import gradient_importance
from explorer.analyses.corpus.pruning import (
    compare_steps,
    curve_rows,
    importance_order,
    importance_scores,
    least_important,
    pruning_curve,
    token_diff,
)
from explorer.analyses.corpus.roles import Thresholds
from explorer.capture.head_sets import HeadSpec, all_heads, head_mask, parse_heads
from explorer.capture.trace import trace_sentence
from explorer.capture.translation import translate
from explorer.models.data import read_parallel
from explorer.models.hooks import model_run
from explorer.models.vocabulary import attention_hook
from tests.conftest import MULTI30K, SENTENCES, batch_of


def test_pruning_no_head_is_exactly_the_unpruned_model(tiny_checkpoint):
    plain = trace_sentence(tiny_checkpoint, SENTENCES[0])
    none = trace_sentence(tiny_checkpoint, SENTENCES[0], pruned=[])
    for kind in ("encoder", "decoder", "cross"):
        assert np.array_equal(plain.pattern(kind), none.pattern(kind))
    assert translate(tiny_checkpoint, SENTENCES, pruned=[]) == translate(tiny_checkpoint, SENTENCES)
    steps = compare_steps(tiny_checkpoint, plain, [])
    assert steps.unpruned == steps.pruned and max(steps.kl) == 0.0


def test_pruning_all_cross_attention_makes_the_output_independent_of_the_source(tiny_checkpoint):
    model, tokenizer = tiny_checkpoint.model, tiny_checkpoint.tokenizer
    gates = head_mask(parse_heads("cross.*.*", model.config), model.config)
    target = torch.tensor([[2, 17, 42, 99, 5]])
    with model_run(head_mask=gates):
        outputs = [model(batch_of(tokenizer, [s]), target) for s in SENTENCES]
        translations = translate(tiny_checkpoint, SENTENCES, pruned=parse_heads("cross.*.*", model.config))
    assert all(torch.equal(outputs[0], o) for o in outputs[1:])
    # An untrained model never says EOS, so each output is cut by its own source-length step limit:
    # the same token sequence, cut at different lengths.
    longest = max(translations, key=len)
    assert all(longest.startswith(t) for t in translations)
    assert not torch.equal(model(batch_of(tokenizer, SENTENCES[:1]), target), model(batch_of(tokenizer, SENTENCES[1:2]), target))


def test_importance_scores_raw_or_layer_normalised_unless_a_layer_has_one_head():
    def report(heads_per_layer):
        return {"heads": [{"kind": "encoder", "layer": layer, "head": head, "gradient_importance": 0.1 * (layer + 1),
                           "gradient_importance_normalised": 0.5 if heads_per_layer > 1 else 1.0}
                          for layer in range(3) for head in range(heads_per_layer)]}

    assert set(importance_scores(report(2), "layer").values()) == {0.5}
    assert sorted(set(importance_scores(report(2), "raw").values())) == pytest.approx([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="unknown normalisation"):
        importance_scores(report(2), "softmax")
    one_head = importance_scores(report(1), "layer")  # normalised, every score would be 1: the order would mean nothing
    assert [one_head[HeadSpec("encoder", layer, 0)] for layer in range(3)] == pytest.approx([0.1, 0.2, 0.3])


def test_least_important_and_role_selection():
    config_heads = [HeadSpec("encoder", 0, h) for h in range(4)]
    scores = {config_heads[0]: 0.9, config_heads[1]: 0.1, config_heads[2]: 0.5, config_heads[3]: 0.3}
    assert least_important(scores, 0.5, config_heads) == [config_heads[1], config_heads[3]]
    assert least_important(scores, 0.0, config_heads) == [] and len(least_important(scores, 1.0, config_heads)) == 4
    with pytest.raises(ValueError):
        least_important(scores, 1.5, config_heads)
    roles = {"heads": [{"kind": "encoder", "layer": 0, "head": 0, "roles": ["positional"],
                        "positional": {"offset": -1, "share": 0.95}},
                       {"kind": "encoder", "layer": 0, "head": 1, "roles": [], "positional": {"offset": 1, "share": 0.6}}]}
    assert heads_without_role(head_table(roles, None)) == [HeadSpec("encoder", 0, 1)]
    # At the thresholds a person set: lower, both heads have a role; higher, neither has.
    assert heads_without_role(head_table(roles, None, Thresholds(positional=0.5))) == []
    assert heads_without_role(head_table(roles, None, Thresholds(positional=0.99))) == [HeadSpec("encoder", 0, 0),
                                                                                       HeadSpec("encoder", 0, 1)]


def test_token_diff():
    diff = token_diff(["▁Ein", "▁Hund", "▁läuft", "."], ["▁Ein", "▁Mann", "▁läuft", "▁schnell", "."])
    assert [d.operation for d in diff] == ["equal", "replace", "equal", "insert", "equal"]
    assert diff[1].before == ["▁Hund"] and diff[1].after == ["▁Mann"]


@pytest.mark.slow
def test_importance_order_beats_random_with_planted_useless_heads(h8):
    """Silence all 8 heads of cross-attention layer 0 through a hook: importance must rank them first, so
    pruning them first costs nothing, while random orders prune useful heads too."""
    sources, references = read_parallel(MULTI30K / "val.en.gz", MULTI30K / "val.de.gz")
    sources, references = sources[:20], references[:20]

    def silence(z, name):
        return torch.zeros_like(z)

    with model_run({attention_hook("cross", 0, "z"): silence}, hook_names=h8.model.hook_names):
        scorer = TranslationScorer(h8, sources, references)
        gradient = gradient_importance(scorer)
        scores = {spec: float(gradient[spec.kind][spec.layer, spec.head]) for spec in all_heads(h8.model.config)}
        cross = [h for h in all_heads(h8.model.config) if h.kind == "cross"]
        assert set(importance_order(scores, cross)[:8]) == {HeadSpec("cross", 0, h) for h in range(8)}
        curve = pruning_curve(scorer, scores, kinds=("cross",), steps=6, seeds=2)
    data = curve["kinds"]["cross"]
    assert data["pruned"][:3] == [0, 4, 8]
    assert data["importance"][:3] == [data["importance"][0]] * 3        # the planted heads go first, for free
    for point in range(3):                                              # never worse than random there
        assert data["importance"][point] >= data["random_mean"][point]
    assert data["random_mean"][2] < data["importance"][2]               # random orders do lose something
    assert len(curve_rows(curve)) == 7 * 3          # importance and 2 random orders at 7 points


@pytest.mark.slow
def test_two_threads_with_different_prunings_get_their_own_translations(h8):
    prunings = [parse_heads("enc.0.*,cross.1.*", h8.model.config), parse_heads("dec.2.*,cross.0.*", h8.model.config)]
    expected = [translate(h8, SENTENCES, pruned=p) for p in prunings]
    assert expected[0] != expected[1]
    results = {0: [], 1: []}
    barrier = threading.Barrier(2)

    def worker(index):
        for _ in range(5):
            barrier.wait()
            results[index].append(translate(h8, SENTENCES, pruned=prunings[index]))

    threads = [threading.Thread(target=worker, args=(i,)) for i in (0, 1)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert all(r == expected[0] for r in results[0]) and all(r == expected[1] for r in results[1])
