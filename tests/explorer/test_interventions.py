"""The notebook's intervention API (explorer/analyses/sentence/interventions.py, issue 47): run_with_hooks as TransformerLens's,
ablating and patching a head at every position or at one, and per-position patching, each checked against an
independent computation: the model's own teacher-forced log-probabilities, pruning by head gates, explorer.patch,
and one hooked run per position."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from explorer.capture.forcing import forced_log_probs
from explorer.capture.head_sets import head_mask, parse_heads
from explorer.capture.inputs import InputError, prepare_source
from explorer.models.hooks import HookNameError, model_run
from tests.hugging_face_models import saved_model

CLEAN, CORRUPT = "A dog runs in the park.", "A cat runs in the park."


def test_a_plain_run_scores_the_models_own_output_as_teacher_forcing_does(h8):
    run = explorer.run_with_hooks(h8, CLEAN)
    source = prepare_source(CLEAN, h8).ids
    with torch.no_grad():
        expected = forced_log_probs(h8, source, run.output_ids)
    assert float(expected[range(len(run.output_ids)), run.output_ids].double().sum()) == \
        pytest.approx(run.output_log_prob(), abs=1e-5)
    assert h8.detokenize(run.output_ids[:-1]) == explorer.translate(h8, [CLEAN])[0]


def test_a_reader_sees_what_the_cache_keeps_and_the_patterns_rows_sum_to_one(h8):
    seen = {}
    name = explorer.head_value("cross", 1, "pattern")
    run = explorer.run_with_hooks(h8, CLEAN, [(name, lambda value, hook: seen.setdefault(hook, value.clone()))],
                                  names="*.cross_attn.pattern")
    assert torch.equal(seen[name], run.cache[name])
    np.testing.assert_allclose(run.cache[name].sum(-1).numpy(), 1.0, atol=1e-5)
    assert len(explorer.hook_names(h8, "*.cross_attn.pattern")) == h8.layers("cross")


def test_ablating_a_head_everywhere_is_pruning_it(h8):
    ablated = explorer.run_with_hooks(h8, CLEAN, [explorer.ablate_head("cross", 2, 5)], target="Ein Hund rennt.")
    plain = explorer.run_with_hooks(h8, CLEAN, target="Ein Hund rennt.")
    gates = head_mask(parse_heads("cross.2.5", h8), h8)
    with model_run(head_mask=gates):
        pruned = explorer.run_with_hooks(h8, CLEAN, target="Ein Hund rennt.")
    torch.testing.assert_close(ablated.logits, pruned.logits)
    assert not torch.allclose(ablated.logits, plain.logits)


def test_ablating_a_decoder_head_at_one_position_leaves_the_earlier_positions(h8):
    plain = explorer.run_with_hooks(h8, CLEAN)
    at_three = explorer.run_with_hooks(h8, CLEAN, [explorer.ablate_head("decoder", 0, 2, positions=3)])
    torch.testing.assert_close(at_three.logits[:3], plain.logits[:3])       # causal: nothing before 3 moves
    assert not torch.allclose(at_three.logits[3], plain.logits[3])


def test_patching_a_run_with_its_own_value_changes_nothing(h8):
    name = explorer.head_value("encoder", 1)
    run = explorer.run_with_hooks(h8, CLEAN, names=name)
    again = explorer.run_with_hooks(h8, CLEAN, [explorer.patch_head("encoder", 1, 3, run.cache[name])])
    torch.testing.assert_close(again.logits, run.logits)


@pytest.mark.slow
def test_per_position_patching_agrees_with_whole_head_patching_and_with_one_run_per_position(h8):
    result = explorer.patch_positions(h8, CLEAN, CORRUPT, "encoder", 2, 0)
    assert result.whole_head == pytest.approx(explorer.patch(h8, CLEAN, CORRUPT).heads["encoder"][2, 0], abs=1e-6)
    assert result.query_tokens == prepare_source(CLEAN, h8).pieces and len(result.restored) == len(result.query_tokens)
    # the batch's rows against the public API, one hooked run per position, scored on the clean output
    name = explorer.head_value("encoder", 2)
    clean = explorer.run_with_hooks(h8, CLEAN, names=name)
    target = h8.detokenize(clean.output_ids[:-1])
    corrupt = explorer.run_with_hooks(h8, CORRUPT, target=target).output_log_prob()
    for position in (1, 2):
        patched = explorer.run_with_hooks(h8, CORRUPT, [explorer.patch_head("encoder", 2, 0, clean.cache[name],
                                                                            position)], target=target)
        spread = clean.output_log_prob() - corrupt
        share = (patched.output_log_prob() - corrupt) / spread
        # float32 in a batch of rows against one row: ~1e-5 nats apart, divided by the spread
        assert result.restored[position] == pytest.approx(share, abs=5e-5 / abs(spread))


def test_a_wrong_name_a_wrong_hook_or_a_wrong_head_is_one_clear_error(h8):
    with pytest.raises(HookNameError, match="no hook point is called 'encoder.layers.9.self_attn.z'"):
        explorer.run_with_hooks(h8, CLEAN, [("encoder.layers.9.self_attn.z", lambda v, n: None)])
    with pytest.raises(InputError, match="not a function"):
        explorer.run_with_hooks(h8, CLEAN, [("*.cross_attn.z", "zero")])
    with pytest.raises(InputError, match="heads 0–7"):
        explorer.patch_positions(h8, CLEAN, CORRUPT, "encoder", 0, 8)
    with pytest.raises(InputError, match="attention kind"):
        explorer.head_value("self", 0)


@pytest.mark.parametrize("family", ["gpt2", "bert", "sentence-bert"])
def test_every_kind_of_model_runs_with_hooks(family, tmp_path_factory):
    model = explorer.load(str(saved_model(family, tmp_path_factory)))
    kind = "decoder" if family == "gpt2" else "encoder"
    plain = explorer.run_with_hooks(model, "a dog plays in the snow")
    ablated = explorer.run_with_hooks(model, "a dog plays in the snow",
                                      [explorer.ablate_head(kind, 0, h) for h in range(model.heads)])
    if family == "sentence-bert":
        assert plain.logits is None and plain.embedding.shape == (model.d_model,)
        assert not torch.allclose(plain.embedding, ablated.embedding)
    else:
        assert plain.logits.shape[-1] == len(model.tokenizer) or plain.logits.ndim == 2
        assert not torch.allclose(plain.logits, ablated.logits)


def test_the_interventions_are_public():
    for name in ("run_with_hooks", "hook_names", "head_value", "ablate_head", "patch_head", "patch_positions"):
        assert name in explorer.__all__ and callable(getattr(explorer, name))
    assert "q, k, v" in explorer.head_value.__doc__ and "fn(value, name)" in explorer.run_with_hooks.__doc__
