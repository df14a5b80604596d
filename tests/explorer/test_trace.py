import numpy as np
import pytest
import torch

from explorer.capture.head_sets import head_mask, parse_heads
from explorer.capture.trace import Trace, trace_sentence

SENTENCE = "Two dogs play in the snow."


@pytest.fixture(scope="module")
def trace(tiny_checkpoint):
    return trace_sentence(tiny_checkpoint, SENTENCE, top_k=5)


def test_shapes_and_distributions(trace, tiny_checkpoint):
    config = tiny_checkpoint.model.config
    src, tgt = len(trace.source_tokens), len(trace.target_tokens)
    assert trace.source_tokens[-1] == "</s>" and trace.target_tokens[0] == "<s>"
    shapes = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}
    for kind, (queries, keys) in shapes.items():
        pattern = trace.pattern(kind)
        assert pattern.shape == (config.layers(kind), config.heads, queries, keys)
        np.testing.assert_allclose(pattern.sum(-1), 1.0, atol=1e-5)
        assert trace.masks[kind].shape == (queries, keys)
        assert trace.attention[kind].value("q").shape == (config.layers(kind), config.heads, queries, config.d_k)
    assert not trace.masks["decoder"][np.triu_indices(tgt, 1)].any()
    assert trace.pattern("decoder")[..., np.triu_indices(tgt, 1)[0], np.triu_indices(tgt, 1)[1]].max() == 0
    assert trace.positional["source"].shape == (src, config.d_model)
    np.testing.assert_allclose(trace.inputs["source"], trace.embeddings["source"] + trace.positional["source"], atol=1e-5)


def test_steps_record_what_was_chosen(trace):
    assert len(trace.steps) == len(trace.output_tokens)
    for step, token in zip(trace.steps, trace.output_tokens):
        assert step.chosen == token
        assert step.top_tokens[0] == token  # greedy picks the most probable token
        assert step.top_probs == sorted(step.top_probs, reverse=True) and sum(step.top_probs) <= 1 + 1e-6
        assert step.entropy >= 0


def test_npz_round_trip(trace, tmp_path):
    loaded = Trace.load(trace.save(tmp_path / "t.npz"))
    assert loaded.metadata() == trace.metadata()
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_array_equal(loaded.pattern(kind), trace.pattern(kind))
        np.testing.assert_array_equal(loaded.masks[kind], trace.masks[kind])


def test_json_round_trip(trace, tmp_path):
    loaded = Trace.load(trace.save(tmp_path / "t.json"))
    assert loaded.metadata() == trace.metadata()
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(loaded.pattern(kind), trace.pattern(kind), atol=1e-6)
        np.testing.assert_array_equal(loaded.masks[kind], trace.masks[kind])
        assert loaded.masks[kind].dtype == trace.masks[kind].dtype
    np.testing.assert_allclose(loaded.positional["source"], trace.positional["source"], atol=1e-6)


def test_pruned_trace_names_its_heads_and_zeroes_them(tiny_checkpoint):
    pruned = parse_heads("enc.0.1,cross.1.*", tiny_checkpoint.model.config)
    trace = trace_sentence(tiny_checkpoint, SENTENCE, pruned=pruned)
    assert trace.pruned == "cross.1.0,cross.1.1,cross.1.2,cross.1.3,enc.0.1"
    # The captured z is before the gate; the gate then zeroes the pruned head's contribution: the block's output
    # equals the output projection of z with that head's slice set to 0, and differs from the unpruned one.
    from explorer.models.hooks import capture

    model = tiny_checkpoint.model
    src = torch.tensor([tiny_checkpoint.tokenizer.encode(SENTENCE).ids])
    names = ["encoder.layers.0.self_attn.z", "encoder.layers.0.self_attn.out"]
    with torch.no_grad(), capture(model.hook_names, names, head_mask=head_mask(pruned, model.config)) as cache:
        model.encode(src)
    with torch.no_grad(), capture(model.hook_names, names) as unpruned:
        model.encode(src)
    z = cache[names[0]].clone()
    assert z[0, 1].abs().sum() > 0 and torch.equal(z, unpruned[names[0]])
    z[:, 1] = 0
    attention = model.encoder.layers[0].self_attn
    merged = z.transpose(1, 2).reshape(1, z.shape[2], -1)
    torch.testing.assert_close(cache[names[1]], attention.w_o(merged))
    assert not torch.allclose(cache[names[1]], unpruned[names[1]])


def test_beam_trace(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, SENTENCE, beam_size=3)
    assert trace.decoding == "beam 3" and len(trace.steps) == len(trace.output_tokens)
