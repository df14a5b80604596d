"""Hugging Face models through the explorer's hooks: the patterns are transformers' own, head masks gate what
they should, per call, and loading never runs pickle or reaches the network. Tiny random models, built here."""

import pickle
import threading

import pytest
import torch
import transformers

from models.hooks import HookNameError, model_run
from models.hugging_face import HuggingFaceError, hugging_face_folder, load_hugging_face
from models.vocabulary import attention_hook

VOCAB = 64
TINY = {
    "marian": lambda: transformers.MarianConfig(
        vocab_size=VOCAB, decoder_vocab_size=VOCAB, d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32,
        max_position_embeddings=64, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0),
    "bart": lambda: transformers.BartConfig(
        vocab_size=VOCAB, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2),
    "bert": lambda: transformers.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                                            num_attention_heads=4, intermediate_size=32, max_position_embeddings=64),
    "gpt2": lambda: transformers.GPT2Config(vocab_size=VOCAB, n_embd=16, n_layer=2, n_head=4, n_positions=64),
}
CLASSES = {"marian": "MarianMTModel", "bart": "BartForConditionalGeneration", "bert": "BertForMaskedLM",
           "gpt2": "GPT2LMHeadModel"}


@pytest.fixture(scope="module", params=list(TINY))
def tiny(request, tmp_path_factory):
    """(family, folder) of a tiny random model saved with save_pretrained (safetensors)."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp(request.param)
    getattr(transformers, CLASSES[request.param])(TINY[request.param]()).save_pretrained(folder)
    return request.param, folder


def inputs(family):
    """A padded batch of two sequences (the second one shorter) and, for encoder–decoders, target ids."""
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 2], [11, 12, 13, 2, 0, 0, 0]])
    if family == "bart":
        ids = torch.where(ids == 0, 1, ids)
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    batch = {"input_ids": ids, "attention_mask": mask}
    if family in ("marian", "bart"):
        batch["decoder_input_ids"] = torch.tensor([[0, 20, 21, 22], [0, 23, 24, 25]])
    return batch


def their_attentions(family, folder, batch):
    """transformers' own eager attention weights, by our kind names."""
    model = getattr(transformers, CLASSES[family]).from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        output = model(**batch, output_attentions=True)
    if family in ("marian", "bart"):
        return {"encoder": output.encoder_attentions, "decoder": output.decoder_attentions,
                "cross": output.cross_attentions}
    return {"encoder" if family == "bert" else "decoder": output.attentions}


def test_captured_patterns_equal_transformers_eager_attentions(tiny):
    family, folder = tiny
    loaded = load_hugging_face(folder)
    batch = inputs(family)
    output, cache = loaded.run_with_cache("*.pattern", **batch)
    theirs = their_attentions(family, folder, batch)
    assert set(theirs) == set(loaded.kinds)
    for kind, layers in theirs.items():
        assert loaded.layers(kind) == len(layers) == 2
        for layer, pattern in enumerate(layers):
            torch.testing.assert_close(cache.attention(kind, layer, "pattern"), pattern, atol=1e-5, rtol=0)
    rows = cache.layers(loaded.kinds[0], "pattern").sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows))
    if family != "gpt2":            # padded keys of the short sequence get no attention
        assert cache.attention(loaded.kinds[0], 0, "pattern")[1, :, :4, 4:].abs().max() == 0


def test_a_gate_of_ones_changes_nothing_and_a_zero_gate_silences_the_head(tiny):
    family, folder = tiny
    loaded = load_hugging_face(folder)
    batch = inputs(family)
    kind = loaded.kinds[-1]
    plain, _ = loaded.run_with_cache("*.z", **batch)
    ones = {k: torch.ones(loaded.layers(k), loaded.heads) for k in loaded.kinds}
    same, _ = loaded.run_with_cache("*.z", head_mask=ones, **batch)
    assert torch.equal(same.logits, plain.logits)
    gates = dict(ones, **{kind: ones[kind].clone()})
    gates[kind][1, 2] = 0.0
    masked, cache = loaded.run_with_cache([attention_hook(kind, 1, "z"), attention_hook(kind, 1, "out")],
                                          head_mask=gates, **batch)
    assert not torch.equal(masked.logits, plain.logits)
    _, unmasked = loaded.run_with_cache([attention_hook(kind, 1, "z")], **batch)
    # The gate acts after z is captured (z is what the head computed) and before the output projection.
    torch.testing.assert_close(cache.attention(kind, 1, "z"), unmasked.attention(kind, 1, "z"))


def test_masking_every_cross_attention_head_cuts_the_decoder_loose_from_the_source(tiny):
    family, folder = tiny
    if family not in ("marian", "bart"):
        pytest.skip("no cross-attention in this family")
    loaded = load_hugging_face(folder)
    batch = inputs(family)
    other = dict(batch, input_ids=batch["input_ids"].flip(0), attention_mask=batch["attention_mask"].flip(0))
    gates = {"cross": torch.zeros(loaded.layers("cross"), loaded.heads)}
    first, _ = loaded.run_with_cache("*.pattern", head_mask=gates, **batch)
    second, _ = loaded.run_with_cache("*.pattern", head_mask=gates, **other)
    torch.testing.assert_close(first.logits, second.logits)
    unmasked, _ = loaded.run_with_cache("*.pattern", **other)
    assert not torch.allclose(unmasked.logits, second.logits)


def test_two_threads_with_different_masks_get_their_own_results(tiny):
    family, folder = tiny
    loaded = load_hugging_face(folder)
    batch = inputs(family)
    kind = loaded.kinds[0]
    masks = [{kind: torch.ones(loaded.layers(kind), loaded.heads)}, {kind: torch.zeros(loaded.layers(kind), loaded.heads)}]
    expected = [loaded.run_with_cache("*.pattern", head_mask=m, **batch)[0].logits for m in masks]
    results, start = [None, None], threading.Barrier(2)

    def run(index):
        start.wait()
        for _ in range(5):
            results[index] = loaded.run_with_cache("*.pattern", head_mask=masks[index], **batch)[0].logits

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert torch.equal(results[0], expected[0]) and torch.equal(results[1], expected[1])
    assert not torch.equal(expected[0], expected[1])


def test_hooks_replace_values_and_misspelt_names_raise(tiny):
    family, folder = tiny
    loaded = load_hugging_face(folder)
    batch = inputs(family)
    kind = loaded.kinds[0]
    plain, _ = loaded.run_with_cache("*.pattern", **batch)

    def uniform(pattern, name):
        return torch.full_like(pattern, 1.0 / pattern.shape[-1])

    with model_run({attention_hook(kind, 0, "pattern"): uniform}, hook_names=loaded.hook_names):
        changed, cache = loaded.run_with_cache(attention_hook(kind, 0, "pattern"), **batch)
    assert not torch.allclose(changed.logits, plain.logits)
    with pytest.raises(HookNameError):
        loaded.run_with_cache("encoder.layers.0.self_attn.patern", **batch)


def test_pickle_only_folders_are_refused_without_unpickling(tiny, tmp_path, monkeypatch):
    family, folder = tiny
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_bytes((folder / "config.json").read_bytes())
    (pickled / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": 1}))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickled"))
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load"))
    with pytest.raises(HuggingFaceError, match=r"only pickle weights \(pytorch_model.bin\).*safe_serialization=True"):
        load_hugging_face(pickled)


def test_which_inputs_are_hugging_face_models(tiny, tmp_path, tiny_checkpoint, monkeypatch):
    family, folder = tiny
    assert hugging_face_folder(folder) == folder
    assert hugging_face_folder(tiny_checkpoint.path) is None            # ours: config.json without model_type
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    from huggingface_hub import constants
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(HuggingFaceError, match="Helsinki-NLP/opus-mt-en-de: not a folder, and no copy"):
        hugging_face_folder("Helsinki-NLP/opus-mt-en-de")
    cached = tmp_path / "empty-cache" / "models--someone--tiny" / "snapshots" / "abc123"
    cached.mkdir(parents=True)
    (cached / "config.json").write_bytes((folder / "config.json").read_bytes())
    assert hugging_face_folder("someone/tiny") == cached
    unsupported = tmp_path / "t5"
    unsupported.mkdir()
    (unsupported / "config.json").write_text('{"model_type": "t5"}')
    (unsupported / "model.safetensors").write_bytes(b"")
    with pytest.raises(HuggingFaceError, match="model_type 't5' is not supported"):
        load_hugging_face(unsupported)
