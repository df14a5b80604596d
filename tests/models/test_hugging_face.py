"""Hugging Face models through the explorer's hooks: the patterns are transformers' own, head masks gate what
they should, per call, and loading never runs pickle or reaches the network. Tiny random models of every family,
with their own tokenizers (tests/hugging_face_models.py)."""

import pickle
import threading

import pytest
import torch

from explorer.models.hooks import HookNameError, model_run
from explorer.models.hugging_face import HuggingFaceError
from explorer.models.loader import hugging_face_folder, open_model
from explorer.models.vocabulary import attention_hook
from tests.hugging_face_models import FAMILIES, eager_attentions, saved_model

LONG, SHORT = "two men play football on a field", "a dog runs"


@pytest.fixture(scope="module", params=list(FAMILIES))
def tiny(request, tmp_path_factory):
    """(opened model, folder) of a tiny random model saved with save_pretrained (safetensors)."""
    folder = saved_model(request.param, tmp_path_factory)
    return open_model(folder), folder


def inputs(model):
    """(source, target) batches of two sentences, the second one shorter (padded): the encoder reads them; an
    encoder–decoder's decoder reads the same short output after its prefix; a decoder-only model reads the
    sentences themselves."""
    rows = [model.encode(text).ids for text in (LONG, SHORT)]
    assert len(rows[1]) < len(rows[0])
    batch = model.pad(rows)
    if not model.has("decoder"):
        return batch, None
    if not model.has("encoder"):
        return None, batch
    output = model.encode_reference("a dog runs in the snow")[:3]
    return batch, model.pad([model.decoder_input(row, output)[0] for row in rows])


@pytest.mark.slow
def test_captured_patterns_equal_transformers_eager_attentions(tiny):
    model, folder = tiny
    source, target = inputs(model)
    _, cache = model.run_with_cache(source, target, "*.pattern")
    theirs = eager_attentions(model, folder, source, target)
    assert set(theirs) == set(model.kinds)
    for kind, layers in theirs.items():
        assert model.layers(kind) == len(layers) == 2
        for layer, pattern in enumerate(layers):
            torch.testing.assert_close(cache.attention(kind, layer, "pattern"), pattern, atol=1e-5, rtol=0)
    rows = cache.layers(model.kinds[0], "pattern").sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows))
    short = int((source if source is not None else target).present[1].sum())
    # padded keys of the short sequence get no attention from its real queries
    assert cache.attention(model.kinds[0], 0, "pattern")[1, :, :short, short:].abs().max() == 0


def test_a_gate_of_ones_changes_nothing_and_a_zero_gate_silences_the_head(tiny):
    model, _ = tiny
    source, target = inputs(model)
    kind = model.kinds[-1]
    plain, _ = model.run_with_cache(source, target, "*.z")
    ones = {k: torch.ones(model.layers(k), model.heads) for k in model.kinds}
    same, _ = model.run_with_cache(source, target, "*.z", head_mask=ones)
    assert torch.equal(same, plain)
    gates = dict(ones, **{kind: ones[kind].clone()})
    gates[kind][1, 2] = 0.0
    masked, cache = model.run_with_cache(source, target, [attention_hook(kind, 1, "z"), attention_hook(kind, 1, "out")],
                                         head_mask=gates)
    assert not torch.equal(masked, plain)
    _, unmasked = model.run_with_cache(source, target, [attention_hook(kind, 1, "z")])
    # The gate acts after z is captured (z is what the head computed) and before the output projection.
    torch.testing.assert_close(cache.attention(kind, 1, "z"), unmasked.attention(kind, 1, "z"))


def test_masking_every_cross_attention_head_cuts_the_decoder_loose_from_the_source(tiny):
    model, _ = tiny
    if not model.has("cross"):
        pytest.skip("no cross-attention in this family")
    source, target = inputs(model)
    other = type(source)(source.ids.flip(0), source.present.flip(0))
    gates = {"cross": torch.zeros(model.layers("cross"), model.heads)}
    first, _ = model.run_with_cache(source, target, "*.pattern", head_mask=gates)
    second, _ = model.run_with_cache(other, target, "*.pattern", head_mask=gates)
    torch.testing.assert_close(first, second)
    unmasked, _ = model.run_with_cache(other, target, "*.pattern")
    assert not torch.allclose(unmasked, second)


def test_two_threads_with_different_masks_get_their_own_results(tiny):
    model, _ = tiny
    source, target = inputs(model)
    kind = model.kinds[0]
    masks = [{kind: torch.ones(model.layers(kind), model.heads)}, {kind: torch.zeros(model.layers(kind), model.heads)}]
    expected = [model.run_with_cache(source, target, "*.pattern", head_mask=m)[0] for m in masks]
    results, start = [None, None], threading.Barrier(2)

    def run(index):
        start.wait()
        for _ in range(5):
            results[index] = model.run_with_cache(source, target, "*.pattern", head_mask=masks[index])[0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert torch.equal(results[0], expected[0]) and torch.equal(results[1], expected[1])
    assert not torch.equal(expected[0], expected[1])


def test_hooks_replace_values_and_misspelt_names_raise(tiny):
    model, _ = tiny
    source, target = inputs(model)
    kind = model.kinds[0]
    plain, _ = model.run_with_cache(source, target, "*.pattern")

    def uniform(pattern, name):
        return torch.full_like(pattern, 1.0 / pattern.shape[-1])

    with model_run({attention_hook(kind, 0, "pattern"): uniform}, hook_names=model.hook_names):
        changed, cache = model.run_with_cache(source, target, attention_hook(kind, 0, "pattern"))
    assert not torch.allclose(changed, plain)
    with pytest.raises(HookNameError):
        model.run_with_cache(source, target, "encoder.layers.0.self_attn.patern")


def test_pickle_only_folders_are_refused_without_unpickling(tiny, tmp_path, monkeypatch):
    _, folder = tiny
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_bytes((folder / "config.json").read_bytes())
    (pickled / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": 1}))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickled"))
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load"))
    with pytest.raises(HuggingFaceError, match=r"only pickle weights \(pytorch_model.bin\).*safe_serialization=True"):
        open_model(pickled)


def test_which_inputs_are_hugging_face_models(tiny, tmp_path, tiny_checkpoint, monkeypatch):
    _, folder = tiny
    assert hugging_face_folder(folder) == folder
    assert hugging_face_folder(tiny_checkpoint.path) is None            # ours: config.json without model_type
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(HuggingFaceError, match=r"Helsinki-NLP/opus-mt-en-de: not a folder, and no copy"
                                               r".*\(hf download Helsinki-NLP/opus-mt-en-de\)"):
        hugging_face_folder("Helsinki-NLP/opus-mt-en-de")
    cached = tmp_path / "empty-cache" / "models--someone--tiny" / "snapshots" / "abc123"
    cached.mkdir(parents=True)
    (cached / "config.json").write_bytes((folder / "config.json").read_bytes())
    (cached.parents[1] / "refs").mkdir()
    (cached.parents[1] / "refs" / "main").write_text("abc123")        # as `hf download` leaves it
    assert hugging_face_folder("someone/tiny") == cached
    unsupported = tmp_path / "xlnet"
    unsupported.mkdir()
    (unsupported / "config.json").write_text('{"model_type": "xlnet"}')
    (unsupported / "model.safetensors").write_bytes(b"")
    with pytest.raises(HuggingFaceError, match="model_type 'xlnet' is not supported"):
        open_model(unsupported)


@pytest.mark.parametrize("family", ["marian", "m2m100"])      # without and with a forced language token
def test_a_checkpoints_own_max_length_caps_generation_as_transformers_does(family, tmp_path_factory):
    """A random model runs to its length limit: with the max_length its generation_config.json sets, the
    explorer's output is exactly as long as transformers' own generate makes it, and the decoding page says why;
    without one, the limit is 2 × source + 10."""
    from tests.hugging_face_models import OWN_MAX_LENGTH

    model = open_model(saved_model(family, tmp_path_factory))
    source = model.encode(LONG).ids
    ours = model.generate([source])[0]
    with torch.no_grad():            # transformers' own generate, its own config: max_length counts the prefix
        theirs = model.model.generate(input_ids=torch.tensor([source]), do_sample=False, num_beams=1,
                                      max_length=OWN_MAX_LENGTH, min_length=0, forced_eos_token_id=None)
    assert len(ours) == theirs.shape[1] - len(model.decoder_prefix()) == model.step_limit(len(source))
    assert model.step_limit(len(source)) < 2 * len(source) + 10
    assert "max_length" in model.step_limit_rule(len(source))
    model.model.generation_config.max_length = None                 # a checkpoint that sets none
    assert model.step_limit(len(source)) == min(2 * len(source) + 10, model.max_positions - 1)
    assert model.step_limit_rule(len(source)).startswith(f"2 × {len(source)} source tokens + 10")
