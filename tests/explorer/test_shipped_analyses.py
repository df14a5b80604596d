"""The results store: shipped analyses are read or ignored safely; recomputed ones are cached per
(analysis, weights, corpus), and new weights never reuse stale results."""

import json
import os
import shutil

from explorer.analyses.corpus.shipped_analyses import ROLES_FILE, cached_analysis, corpus_hash, shipped
from explorer.models.checkpoint import load_checkpoint


def copy_of(checkpoint, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(checkpoint.path, folder)
    return load_checkpoint(folder)


def test_shipped_reads_a_valid_file_and_ignores_missing_or_corrupt_ones(tiny_checkpoint, tmp_path):
    checkpoint = copy_of(tiny_checkpoint, tmp_path)
    assert shipped(checkpoint, ROLES_FILE) is None
    (checkpoint.path / ROLES_FILE).write_text(json.dumps({"heads": [1, 2]}))
    assert shipped(checkpoint, ROLES_FILE) == {"heads": [1, 2]}
    (checkpoint.path / ROLES_FILE).write_bytes(b"{not json \xff")
    assert shipped(checkpoint, ROLES_FILE) is None


def test_an_analysis_is_computed_once_per_weights_and_corpus(tiny_checkpoint, tmp_path):
    checkpoint, store = copy_of(tiny_checkpoint, tmp_path), tmp_path / "store"
    calls = []

    def compute():
        calls.append(1)
        return {"result": len(calls)}

    corpus = corpus_hash(b"A dog runs.\n")
    assert cached_analysis("roles", checkpoint, corpus, compute, store) == {"result": 1}
    assert cached_analysis("roles", checkpoint, corpus, compute, store) == {"result": 1}       # reused
    assert cached_analysis("roles", checkpoint, corpus_hash(b"Two cats.\n"), compute, store) == {"result": 2}
    assert cached_analysis("importance", checkpoint, corpus, compute, store) == {"result": 3}
    weights = checkpoint.path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1                                             # retrained: other weights, a later mtime
    weights.write_bytes(bytes(data))
    os.utime(weights, (weights.stat().st_atime, weights.stat().st_mtime + 10))
    assert cached_analysis("roles", checkpoint, corpus, compute, store) == {"result": 4}
    assert len(calls) == 4 and not list(store.glob("*.tmp"))
    assert corpus_hash(b"a", b"bc") != corpus_hash(b"ab", b"c")    # parts are hashed apart, not concatenated
