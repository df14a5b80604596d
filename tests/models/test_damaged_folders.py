"""A damaged Hugging Face folder of every family gives one line naming the damaged file and what to do, from the
notebook API and from the command line (models/folder_checks.py): weights cut short at several lengths or with
their header altered, a config or tokenizer file missing or malformed. transformers' own errors (safetensors'
SafetensorError, sentencepiece's RuntimeError, a JSONDecodeError) named no file, and the first escaped as a
33-line traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import explorer
from explorer.models.errors import ExplorerError
from tests.explorer.test_cli import cli
from tests.hugging_face_models import FAMILIES, saved_model


def damaged_copy(family: str, tmp_path_factory, tmp_path: Path, file: str, damage) -> Path:
    folder = tmp_path / family
    shutil.copytree(saved_model(family, tmp_path_factory), folder)
    path = folder / file
    if damage == "missing":
        path.unlink()
    elif isinstance(damage, int):
        path.write_bytes(path.read_bytes()[:damage])
    elif damage == "header":
        data = bytearray(path.read_bytes())
        data[9] ^= 0x01                  # a byte of the JSON header that lists the tensors
        path.write_bytes(bytes(data))
    else:
        path.write_bytes(damage)
    return folder


def one_clean_line(folder: Path, file: str) -> str:
    with pytest.raises(ExplorerError) as raised:
        explorer.load(str(folder))
    message = str(raised.value)
    assert "\n" not in message and str(folder / file) in message, message
    result = cli("trace", "--model", str(folder), "--text", "a dog", "--out", str(folder / "trace.npz"))
    assert result.returncode != 0 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and file in lines[0], result.stderr
    return message


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("size", [0, 100, 5_000, 20_000, "header"])
def test_damaged_weights_are_named_for_every_family(family, size, tmp_path_factory, tmp_path):
    folder = damaged_copy(family, tmp_path_factory, tmp_path, "model.safetensors", size)
    assert "damaged weights" in one_clean_line(folder, "model.safetensors")


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("file", ["config.json", "tokenizer_config.json"])
def test_a_malformed_config_or_tokenizer_file_is_named(family, file, tmp_path_factory, tmp_path):
    folder = damaged_copy(family, tmp_path_factory, tmp_path, file, b"{not json")
    assert "JSON" in one_clean_line(folder, file)


@pytest.mark.parametrize("family, file", [("marian", "source.spm"), ("m2m100", "sentencepiece.bpe.model"),
                                          ("t5", "tokenizer.json"), ("bart", "tokenizer.json"),
                                          ("m2m100", "vocab.json")])
def test_a_malformed_tokenizer_model_is_named(family, file, tmp_path_factory, tmp_path):
    folder = damaged_copy(family, tmp_path_factory, tmp_path, file, b"\x00garbage{")
    one_clean_line(folder, file)


@pytest.mark.parametrize("family, file", [("marian", "source.spm"), ("m2m100", "sentencepiece.bpe.model"),
                                          ("llama", "tokenizer.json")])
def test_a_missing_tokenizer_file_is_named(family, file, tmp_path_factory, tmp_path):
    folder = damaged_copy(family, tmp_path_factory, tmp_path, file, "missing")
    with pytest.raises(ExplorerError, match=f"not there: .*{file}"):
        explorer.load(str(folder))


def test_a_missing_config_is_named(tmp_path_factory, tmp_path):
    folder = damaged_copy("gpt2", tmp_path_factory, tmp_path, "config.json", "missing")
    one_clean_line(folder, "config.json")
