"""Head analyses: shipped in each checkpoint folder, or recomputed on a user's corpus and cached on disk.

The cache key is (analysis, checkpoint weights hash, corpus hash), so the same corpus on the same model is
computed once, whoever asks, and a retrained checkpoint never reuses stale results.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import explorer.settings as settings
from explorer.analyses.corpus.head_table import head_table, most_important
from explorer.analyses.corpus.results import ImportanceReport, RolesReport
from explorer.analyses.corpus.roles import corpus_description, role_summary
from explorer.models.interface import ExplorerModel as Checkpoint
from explorer.models.interface import target_languages
from explorer.models.weights_file import file_sha256

ROLES_FILE, IMPORTANCE_FILE = "head_roles.json", "head_importance.json"
REPORTS = {ROLES_FILE: RolesReport, IMPORTANCE_FILE: ImportanceReport}
CACHE = settings.CACHE / "analyses"


def analyses_folder(checkpoint: Checkpoint) -> Path:
    """Where a model's shipped analyses are: its own folder, or for a model installed as a package (opened by its
    name), the project's models/<name>/ (models/installed.py)."""
    return Path(checkpoint.info.get("analyses_folder") or checkpoint.path)


def shipped(checkpoint: Checkpoint, filename: str) -> dict | None:
    path = analyses_folder(checkpoint) / filename
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def shipped_report(checkpoint: Checkpoint, filename: str):
    """head_roles.json or head_importance.json as its record (explorer/analyses/corpus/results.py), or None."""
    document = shipped(checkpoint, filename)
    return None if document is None else REPORTS[filename].from_json(document, source=str(analyses_folder(checkpoint) / filename))


def summary(roles: RolesReport | dict | None, importance: ImportanceReport | dict | None) -> dict[str, str]:
    """One model's analyses in a few lines: its strongest candidate per role, where the roles were measured,
    and its most important head (masked alone, it costs most by the task's own score)."""
    lines = {}
    if roles:
        roles = RolesReport.from_json(roles)
        lines.update(role_summary(roles.heads))
        lines["roles measured"] = corpus_description(roles)
    top = most_important(head_table(None, importance)) if importance else None
    if top:
        lines["most important (masked alone)"] = top
    return lines


def checkpoint_hash(checkpoint: Checkpoint) -> str:
    """The hash of the weights file (of a sharded Hugging Face model: of its index and every shard's size and time)."""
    folder = Path(checkpoint.folder or checkpoint.path)
    weights = folder / "model.safetensors"
    if weights.is_file():
        stat = weights.stat()
        return file_sha256(str(weights), stat.st_size, stat.st_mtime_ns)
    shards = sorted(folder.glob("*.safetensors"))
    listing = "\n".join(f"{p.name} {p.stat().st_size} {p.stat().st_mtime}" for p in shards).encode()
    return hashlib.sha256(str(folder.resolve()).encode() + listing).hexdigest()


def corpus_hash(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def cached_analysis(analysis: str, checkpoint: Checkpoint, corpus_key: str, compute: Callable[[], dict],
                    folder: Path | None = CACHE) -> dict:
    """The analysis of a corpus, read from `folder` when computed before, else computed and kept there
    (folder None: computed, never written — a shared server's visitor uploads leave nothing on its disk)."""
    if folder is None:
        return compute()
    # A multilingual model's analyses differ by its target language: part of the key.
    language = f"-{checkpoint.target_language}" if target_languages(checkpoint) else ""
    path = folder / f"{analysis}-{checkpoint_hash(checkpoint)[:16]}{language}-{corpus_key[:16]}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    result = compute()
    folder.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)  # concurrent sessions computing the same key never see half a file
    return result
