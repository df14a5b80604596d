"""The attention the hooks capture is a real probability distribution with the masks the paper prescribes."""

import threading

import pytest
import torch

from explorer.models.hooks import capture, model_run
from explorer.models.transformer import Transformer, sinusoidal_positions
from tests.conftest import SENTENCES, batch_of, tiny_config

KINDS = {"encoder": "encoder.layers.{}.self_attn", "decoder": "decoder.layers.{}.self_attn",
         "cross": "decoder.layers.{}.cross_attn"}


def teacher_forced_batch(checkpoint):
    """A padded source batch and a padded target batch (lengths differ, so both sides have padding)."""
    tokenizer = checkpoint.tokenizer
    src = batch_of(tokenizer, SENTENCES)
    tgt = batch_of(tokenizer, ["Ein Mann.", "Zwei Hunde spielen im Schnee und bellen laut.", "Ein Mädchen.", "Es regnet."])
    tgt = torch.cat([torch.full((tgt.shape[0], 1), 2), tgt[:, :-1]], 1)  # BOS + pieces (drop last column)
    return src, tgt


def patterns(checkpoint, src, tgt, head_mask=None):
    model = checkpoint.model
    with capture(model.hook_names, ["*.pattern", "*.mask", "logits"], head_mask=head_mask) as cache:
        model(src, tgt)
    return cache


def test_every_pattern_is_a_distribution_over_keys(tiny_checkpoint):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    cache = patterns(tiny_checkpoint, src, tgt)
    config = tiny_checkpoint.model.config
    for kind, block in KINDS.items():
        for layer in range(config.layers(kind)):
            pattern = cache[f"{block.format(layer)}.pattern"]
            assert pattern.shape[:2] == (src.shape[0], config.heads)
            assert torch.allclose(pattern.sum(-1), torch.ones(pattern.shape[:-1]), atol=1e-5)
            assert (pattern >= 0).all()


def test_decoder_self_attention_never_looks_ahead(tiny_checkpoint):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    cache = patterns(tiny_checkpoint, src, tgt)
    length = tgt.shape[1]
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    for layer in range(tiny_checkpoint.model.config.decoder_layers):
        pattern = cache[f"decoder.layers.{layer}.self_attn.pattern"]
        assert pattern[..., future].abs().max() == 0.0
        allowed = ~future & (tgt != 0)[:, None, None, :]  # past or present, and not padding
        assert pattern.masked_select(allowed.expand_as(pattern)).min() > 0.0
        mask = cache[f"decoder.layers.{layer}.self_attn.mask"]
        assert not mask[..., future].any()


def test_padding_keys_get_exactly_zero(tiny_checkpoint):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    cache = patterns(tiny_checkpoint, src, tgt)
    src_pad = (src == 0)[:, None, None, :]
    tgt_pad = (tgt == 0)[:, None, None, :]
    assert src_pad.any() and tgt_pad.any()
    for layer in range(2):
        for name, pad in (("encoder.layers.{}.self_attn", src_pad), ("decoder.layers.{}.cross_attn", src_pad),
                          ("decoder.layers.{}.self_attn", tgt_pad)):
            pattern = cache[f"{name.format(layer)}.pattern"]
            assert pattern.masked_select(pad.expand_as(pattern)).abs().max() == 0.0


def test_mask_of_ones_is_bit_identical_to_no_mask(tiny_checkpoint):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    config = tiny_checkpoint.model.config
    plain = tiny_checkpoint.model(src, tgt)
    ones = {kind: torch.ones(config.layers(kind), config.heads) for kind in KINDS}
    with model_run(head_mask=ones):
        masked = tiny_checkpoint.model(src, tgt)
    assert torch.equal(plain, masked)


@pytest.mark.parametrize("kind", list(KINDS))
def test_masking_every_head_of_a_layer_changes_the_output(tiny_checkpoint, kind):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    config = tiny_checkpoint.model.config
    gates = torch.ones(config.layers(kind), config.heads)
    gates[1] = 0.0
    plain = tiny_checkpoint.model(src, tgt)
    with model_run(head_mask={kind: gates}):
        pruned = tiny_checkpoint.model(src, tgt)
    assert (plain - pruned).abs().max() > 1e-3


def test_pruned_head_outputs_zero_and_others_are_untouched(tiny_checkpoint):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    gates = torch.ones(2, 4)
    gates[0, 2] = 0.0
    model = tiny_checkpoint.model
    with capture(model.hook_names, "encoder.layers.0.self_attn.*", head_mask={"encoder": gates}) as pruned:
        model(src, tgt)
    with capture(model.hook_names, "encoder.layers.0.self_attn.*") as plain:
        model(src, tgt)
    # The gate acts after z: layer 0's own patterns are unchanged, its output is not.
    assert torch.equal(pruned["encoder.layers.0.self_attn.pattern"], plain["encoder.layers.0.self_attn.pattern"])
    assert not torch.equal(pruned["encoder.layers.0.self_attn.out"], plain["encoder.layers.0.self_attn.out"])


def test_a_hook_can_replace_a_value(tiny_checkpoint):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    model = tiny_checkpoint.model
    plain = model(src, tgt)

    def uniform(pattern, name):
        return torch.full_like(pattern, 1.0 / pattern.shape[-1])

    with model_run({"encoder.layers.0.self_attn.pattern": uniform}, hook_names=model.hook_names):
        changed = model(src, tgt)
    assert (plain - changed).abs().max() > 1e-3
    assert torch.equal(model(src, tgt), plain)  # the hook left nothing behind on the shared module


def test_hook_names_and_shapes(tiny_checkpoint):
    model = tiny_checkpoint.model
    names = set(model.hook_names)
    for expected in ["encoder.embed", "encoder.pos_encoding", "encoder.input", "decoder.embed", "logits",
                     "encoder.layers.1.self_attn.q", "decoder.layers.0.cross_attn.z", "decoder.layers.1.self_attn.scores",
                     "decoder.layers.1.resid_post", "encoder.output"]:
        assert expected in names
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    with capture(model.hook_names, ["decoder.layers.0.cross_attn.*", "encoder.pos_encoding"]) as cache:
        model(src, tgt)
    batch, heads, d_k = src.shape[0], model.config.heads, model.config.d_k
    assert cache["decoder.layers.0.cross_attn.q"].shape == (batch, heads, tgt.shape[1], d_k)
    assert cache["decoder.layers.0.cross_attn.k"].shape == (batch, heads, src.shape[1], d_k)
    assert cache["decoder.layers.0.cross_attn.scores"].shape == (batch, heads, tgt.shape[1], src.shape[1])
    # The captured positional encoding is the sinusoid of Vaswani et al.: PE[p, 0] = sin(p), PE[p, 1] = cos(p).
    position = cache["encoder.pos_encoding"][0]
    p = torch.arange(src.shape[1], dtype=torch.float32)
    assert torch.allclose(position[:, 0], torch.sin(p), atol=1e-6)
    assert torch.allclose(position[:, 1], torch.cos(p), atol=1e-6)
    assert torch.allclose(sinusoidal_positions(10, 32)[:, -1], torch.cos(torch.arange(10.0) / 10000 ** (30 / 32)), atol=1e-6)


def test_scores_are_scaled_dot_products_and_pattern_their_masked_softmax(tiny_checkpoint):
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    model = tiny_checkpoint.model
    with capture(model.hook_names, "decoder.layers.1.self_attn.*") as cache:
        model(src, tgt)
    q, k = cache["decoder.layers.1.self_attn.q"], cache["decoder.layers.1.self_attn.k"]
    scores = q @ k.transpose(-1, -2) / model.config.d_k ** 0.5
    assert torch.allclose(cache["decoder.layers.1.self_attn.scores"], scores, atol=1e-5)
    mask = cache["decoder.layers.1.self_attn.mask"]
    expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    assert torch.allclose(cache["decoder.layers.1.self_attn.pattern"], expected, atol=1e-6)


def test_two_threads_with_different_head_masks_get_their_sequential_results(tiny_checkpoint):
    model = tiny_checkpoint.model
    src, tgt = teacher_forced_batch(tiny_checkpoint)
    masks = [{"encoder": torch.tensor([[0.0, 1, 1, 1], [1, 1, 1, 1]])},
             {"cross": torch.tensor([[1.0, 1, 1, 1], [0, 0, 0, 0]])}]
    expected = []
    for mask in masks:
        with model_run(head_mask=mask):
            expected.append(model(src, tgt))
    barrier = threading.Barrier(2)
    results: dict[int, list[torch.Tensor]] = {0: [], 1: []}

    def worker(index: int) -> None:
        for _ in range(20):
            barrier.wait()  # both threads are inside the model at the same time
            with capture(model.hook_names, "logits", head_mask=masks[index]) as cache:
                model(src, tgt)
            results[index].append(cache["logits"])

    threads = [threading.Thread(target=worker, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not torch.equal(expected[0], expected[1])
    for index in (0, 1):
        assert len(results[index]) == 20
        assert all(torch.equal(r, expected[index]) for r in results[index])


def test_inference_layouts_compute_what_the_trained_weights_say_and_follow_weight_changes(tiny_checkpoint):
    """Without gradients the model multiplies by derived copies (fused W_q|W_k|W_v, feed-forward W_2 and the
    embedding transposed).
    They must give the training path's numbers, and an in-place weight change must reach them."""
    torch.manual_seed(1)
    model = Transformer(tiny_config()).eval()
    src, tgt = teacher_forced_batch(tiny_checkpoint)

    def both_paths():
        with torch.enable_grad():
            trained = model(src, tgt).detach()
        with torch.no_grad():
            derived = model(src, tgt)
        return trained, derived

    trained, derived = both_paths()
    assert torch.allclose(derived, trained, atol=1e-5, rtol=0)
    with torch.no_grad():
        model.decoder.layers[0].self_attn.w_k.weight.mul_(3.0)
        model.embedding.weight[5].add_(1.0)
        model.decoder.layers[1].feed_forward.w_2.weight.mul_(2.0)
    changed, changed_derived = both_paths()
    assert not torch.allclose(changed, trained, atol=1e-3)
    assert torch.allclose(changed_derived, changed, atol=1e-5, rtol=0)
