"""Per layer and attention kind, where attention lands over a corpus: the share on special tokens and punctuation by
weight and by norm (Kobayashi et al. 2020; explorer/analyses/sentence/norms.py's keys and share_on), and the share on
the first token (Xiao et al. 2023's attention sink), each beside what uniform attention over the allowed keys would
give. One trace per sentence (greedy output: decoder and cross-attention read the model's own output)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from explorer.analyses.sentence.norms import frequent_keys, share_on
from explorer.capture.trace import trace_sentence
from explorer.models.interface import ExplorerModel

SHARES = ("weight", "norm", "chance", "first", "first_chance")


def sentence_layer_shares(model: ExplorerModel, trace) -> dict[str, dict[str, np.ndarray]]:
    """kind → share name → [layers] for one traced sentence."""
    shares = {}
    for kind, values in trace.attention.items():
        keys = frequent_keys(model, trace, kind)
        allowed = trace.masks[kind].astype(np.float64)          # uniform over the keys each query may see
        pattern, norm = values.pattern, values.value("norm")
        layers = range(pattern.shape[0])
        shares[kind] = {
            "weight": np.array([share_on(pattern[layer], keys) for layer in layers]),
            "norm": np.array([share_on(norm[layer], keys) for layer in layers]),
            "chance": np.full(len(layers), share_on(allowed, keys)),
            "first": np.array([share_on(pattern[layer], [0]) for layer in layers]),
            "first_chance": np.full(len(layers), share_on(allowed, [0])),
        }
    return shares


def layer_shares(model: ExplorerModel, sentences: list[str],
                 progress: Callable[[float], None] | None = None) -> dict:
    """{"sentences": n, "kinds": kind → share name → [per layer, mean over sentences]} (rounded to 4 places), and
    "per_sentence": each sentence's share by each measure over every layer of every kind (for intervals)."""
    texts = [text for text in sentences if text.strip()]
    totals: dict[str, dict[str, np.ndarray]] = {}
    per_sentence = []           # each sentence's share by each measure, over every layer of every kind
    for number, text in enumerate(texts, start=1):
        sentence = sentence_layer_shares(model, trace_sentence(model, text, fix_casing=False))
        for kind, shares in sentence.items():
            sums = totals.setdefault(kind, {name: np.zeros_like(values) for name, values in shares.items()})
            for name, values in shares.items():
                sums[name] += values
        row = {name: round(float(np.mean(np.concatenate([shares[name] for shares in sentence.values()]))), 4)
               for name in SHARES} if sentence else {}
        if sentence:            # per kind, the first token's share at each layer and uniform attention's (Xiao)
            row["first_by_layer"] = {kind: [round(float(v), 4) for v in shares["first"]]
                                     for kind, shares in sentence.items()}
            row["uniform_first"] = {kind: round(float(shares["first_chance"][0]), 4) for kind, shares in sentence.items()}
        per_sentence.append(row)
        if progress:
            progress(number / len(texts))
    count = max(len(texts), 1)
    return {"sentences": len(texts), "per_sentence": per_sentence,
            "kinds": {kind: {name: [round(float(value) / count, 4) for value in sums[name]] for name in SHARES}
                      for kind, sums in totals.items()}}
