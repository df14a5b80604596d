"""Checkpoints round-trip, never unpickle, and fail with one line naming the file and the problem."""

import json
import pickle
import re
import shutil

import pytest
import torch

from explorer.models.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from explorer.models.transformer import Transformer
from tests.conftest import SENTENCES, batch_of, tiny_config


@pytest.fixture
def folder(tiny_checkpoint, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(tiny_checkpoint.path, copy)
    return copy


def test_round_trip_gives_the_same_outputs(tiny_tokenizer, tmp_path):
    torch.manual_seed(3)
    model = Transformer(tiny_config(heads=2)).eval()
    # Weights are stored as fp16: round the original the same way before comparing.
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(parameter.half().float())
    save_checkpoint(tmp_path / "ckpt", model, tiny_tokenizer.path, {"note": "round trip"})
    loaded = load_checkpoint(tmp_path / "ckpt")
    src = batch_of(tiny_tokenizer, SENTENCES)
    tgt = src[:, :5]
    assert torch.equal(model(src, tgt), loaded.model(src, tgt))
    # Every tensor, the sinusoidal table no file holds included (the loaded model is built without random weights,
    # models/checkpoint.py unfilled_model), and the one embedding still shared by the encoder, decoder and output.
    ours, theirs = model.state_dict(keep_vars=True), loaded.model.state_dict(keep_vars=True)
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[name], theirs[name]) for name in ours)
    assert torch.equal(loaded.model.positions, model.positions)
    shared = loaded.model.embedding.weight
    assert loaded.model.encoder.embedding.weight is shared and loaded.model.decoder.embedding.weight is shared
    assert loaded.model.config == model.config
    assert loaded.info["note"] == "round trip"


def test_loading_never_unpickles(folder, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("pickle used")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    assert load_checkpoint(folder).model.config.heads == 4


def test_a_pickle_posing_as_weights_is_refused_without_running(folder, tmp_path):
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (folder / "model.safetensors").write_bytes(pickle.dumps(Exploit()))
    with pytest.raises(CheckpointError, match="model.safetensors: not a readable safetensors file"):
        load_checkpoint(folder)
    assert not marker.exists()


def test_truncated_weights(folder):
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(CheckpointError, match=r"model\.safetensors: not a readable safetensors file"):
        load_checkpoint(folder)


@pytest.mark.parametrize("missing", ["model.safetensors", "config.json", "tokenizer.model"])
def test_missing_file(folder, missing):
    (folder / missing).unlink()
    with pytest.raises(CheckpointError, match=f"{missing}: missing"):
        load_checkpoint(folder)


def test_architecture_that_does_not_match_the_weights(folder):
    config = json.loads((folder / "config.json").read_text())
    config["architecture"]["d_ff"] = 128
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"model\.safetensors: .*shape"):
        load_checkpoint(folder)


def test_corrupt_config_and_tokenizer(folder):
    (folder / "tokenizer.model").write_bytes(b"not a sentencepiece model")
    with pytest.raises(CheckpointError, match="tokenizer.model: not a SentencePiece model"):
        load_checkpoint(folder)
    (folder / "config.json").write_text("{broken")
    with pytest.raises(CheckpointError, match="config.json: not valid JSON"):
        load_checkpoint(folder)


def test_not_a_folder(tmp_path):
    with pytest.raises(CheckpointError, match="nowhere: no such folder; a checkpoint is a folder with config.json"):
        load_checkpoint(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("hello")
    with pytest.raises(CheckpointError, match="file.txt: is a file, not a checkpoint folder"):
        load_checkpoint(tmp_path / "file.txt")


@pytest.mark.parametrize("value, message", [("256", "architecture.d_model must be a whole number, got '256'"),
                                            (256.0, "architecture.d_model must be a whole number, got 256.0"),
                                            (True, "architecture.d_model must be a whole number, got True"),
                                            (250, "d_model 250 is not divisible by 4 heads")])
def test_a_wrong_architecture_value_is_named(folder, value, message):
    info = json.loads((folder / "config.json").read_text())
    info["architecture"]["d_model"] = value
    (folder / "config.json").write_text(json.dumps(info))
    with pytest.raises(CheckpointError, match=re.escape(message)):
        load_checkpoint(folder)


def test_errors_are_one_line(folder):
    (folder / "model.safetensors").write_bytes(b"\x00" * 100)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(folder)
    assert "\n" not in str(error.value) and str(folder / "model.safetensors") in str(error.value)
