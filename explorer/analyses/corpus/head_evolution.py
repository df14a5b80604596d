"""How each head specialised over training: its role statistics at every epoch, from the training snapshots.

The training run keeps an fp16 snapshot of the weights after every epoch (`epoch-N.safetensors`). Each is
loaded into a model of its own (never the shared one) and measured on the same in-domain sentences as the
shipped roles, so the last point of every line is what the Heads page shows for the finished model.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from explorer.analyses.corpus.roles import Thresholds, analyse_roles
from explorer.analyses.defaults import DEFAULT_THRESHOLDS
from explorer.models.interface import ExplorerModel, ModelError

EVOLUTION_FILE = "head_evolution.json"
SNAPSHOT = re.compile(r"epoch-(\d+)\.safetensors$")


def find_snapshots(folder: Path, every: int = 1) -> dict[int, Path]:
    """epoch -> snapshot file, every `every`-th epoch and always the last."""
    found = {int(m.group(1)): path for path in Path(folder).glob("epoch-*.safetensors")
             if (m := SNAPSHOT.search(path.name))}
    if not found:
        raise ModelError(f"{folder}: no epoch-N.safetensors snapshots")
    last = max(found)
    return {epoch: found[epoch] for epoch in sorted(found) if epoch % every == 0 or epoch == last}


def head_evolution(checkpoint: ExplorerModel, snapshots: dict[int, Path], sentences: list[str], text_name: str = "",
                   thresholds: Thresholds = DEFAULT_THRESHOLDS,
                   progress: Callable[[float], None] | None = None) -> dict:
    """JSON-ready: per head and epoch its top offset and share, confidence, rare-token rate and roles."""
    started = time.perf_counter()
    history = {r["epoch"]: r for r in checkpoint.info.get("training", {}).get("history", [])}
    epochs = sorted(snapshots)
    heads: dict[str, dict] = {}
    for done, epoch in enumerate(epochs, start=1):
        report = analyse_roles(checkpoint.with_weights(snapshots[epoch]), sentences, thresholds=thresholds,
                               text_name=text_name)
        for entry in report.heads:
            line = heads.setdefault(entry["spec"], {"spec": entry["spec"], "kind": entry["kind"], "layer": entry["layer"],
                                                    "head": entry["head"], "offset": [], "share": [], "confidence": [],
                                                    "rare_rate": [], "rare_chance": [], "roles": []})
            positional, rare = entry.get("positional") or {}, entry.get("rare_token") or {}
            line["offset"].append(positional.get("offset"))
            line["share"].append(positional.get("share"))
            line["confidence"].append(entry["confidence"])
            line["rare_rate"].append(rare.get("rate"))
            line["rare_chance"].append(rare.get("chance"))
            line["roles"].append(entry["roles"])
        if progress:
            progress(done / len(epochs))
    return {"epochs": epochs, "val_bleu": [history.get(e, {}).get("val_bleu") for e in epochs],
            "corpus": {"name": text_name, "sentences": len(sentences)}, "thresholds": asdict(thresholds),
            "heads": list(heads.values()), "seconds": round(time.perf_counter() - started, 1)}
