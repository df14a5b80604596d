"""Head roles over a corpus, after Voita et al. 2019: positional, syntactic, rare-token; and confidence.

One batched pass: the encoder reads each sentence; for decoder self-attention and cross-attention the model's
own greedy translation is fed back (teacher forcing) so those heads are measured on what they really see.

- Positional: for at least `positional` (90%) of query tokens, the largest weight sits at one relative offset.
  Measured for self-attention (encoder, decoder); cross-attention has no shared positions.
- Syntactic (encoder, needs gold trees): word-level attention (Clark et al. 2019); for each relation and
  direction, how often the largest weight from one word lands on the other, against the positional baseline
  (always guessing the relation's most frequent offset). Syntactic when it beats the baseline by
  `syntactic_margin` (10 points) over at least `syntactic_min_count` (100) occurrences.
- Rare-token: how often the head's attention averaged over queries peaks on the sentence's least frequent
  token (training-corpus frequency), against chance (1 / keys). Rare-token when that happens in at least
  `rare_rate` (50%) of sentences and at least `rare_over_chance` (3×) the chance rate. Why: with ~15-token
  sentences chance is ~7%, and a head at 50% picks the rarest token over all others more often than not —
  the behaviour Voita et al. describe — while 3× chance guards very short sentences.
- Confidence: mean over queries of the largest weight (Voita et al.).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import torch

from explorer.heads import HeadSpec
from explorer.ud import Tree, align_words, word_attention
from models.checkpoint import Checkpoint
from models.data import pad_batch
from models.decoding import greedy
from models.hooks import capture
from models.tokenizer import BOS, EOS, PAD

RELATIONS = ("nsubj", "obj", "amod", "advmod", "det", "nmod", "case", "compound")
DIRECTIONS = ("dependent→head", "head→dependent")
OFFSETS = 8                           # histogram bins: ≤ −8, −7 … +7, ≥ +8
KINDS = ("encoder", "decoder", "cross")
PATTERN = {"encoder": "encoder.layers.{}.self_attn.pattern", "decoder": "decoder.layers.{}.self_attn.pattern",
           "cross": "decoder.layers.{}.cross_attn.pattern"}


@dataclass(frozen=True)
class Thresholds:
    positional: float = 0.90
    syntactic_margin: float = 0.10
    syntactic_min_count: int = 100
    rare_rate: float = 0.50
    rare_over_chance: float = 3.0


@dataclass
class Tally:
    """Running counts for one attention kind, each [layers, heads] unless said otherwise."""

    layers: int
    heads: int
    queries: int = 0
    sentences: int = 0
    confidence: np.ndarray = None
    offsets: np.ndarray = None           # [layers, heads, 2 * OFFSETS + 1]
    rare_hits: np.ndarray = None
    rare_sentences: int = 0
    rare_chance: float = 0.0              # sum over sentences of 1 / keys
    per_sentence_confidence: list = field(default_factory=list)   # [layers, heads] per sentence
    per_sentence_offsets: list = field(default_factory=list)      # [layers, heads, bins] per sentence

    def __post_init__(self) -> None:
        shape = (self.layers, self.heads)
        self.confidence = np.zeros(shape)
        self.offsets = np.zeros(shape + (2 * OFFSETS + 1,))
        self.rare_hits = np.zeros(shape)


@dataclass
class SyntaxTally:
    hits: dict = field(default_factory=dict)       # (relation, direction) -> [layers, heads]
    counts: dict = field(default_factory=dict)     # (relation, direction) -> occurrences
    offsets: dict = field(default_factory=dict)    # (relation, direction) -> {offset: occurrences}

    def add(self, relation: str, direction: str, top: np.ndarray, source: int, target: int, shape) -> None:
        key = (relation, direction)
        self.hits.setdefault(key, np.zeros(shape))
        self.hits[key] += top[:, :, source] == target
        self.counts[key] = self.counts.get(key, 0) + 1
        offsets = self.offsets.setdefault(key, {})
        offsets[target - source] = offsets.get(target - source, 0) + 1


def _bins(offset: torch.Tensor) -> torch.Tensor:
    return offset.clamp(-OFFSETS, OFFSETS) + OFFSETS


def tally_patterns(tally: Tally, patterns: torch.Tensor, query_real: torch.Tensor, key_real: torch.Tensor,
                    rarest: torch.Tensor | None, positional: bool) -> None:
    """patterns [B, L, H, Q, K]; query_real [B, Q], key_real [B, K]; rarest [B] key positions (or None)."""
    batch, layers, heads, queries, keys = patterns.shape
    top_key = patterns.argmax(-1)                                          # [B, L, H, Q]
    top_weight = patterns.max(-1).values
    q_mask = query_real[:, None, None, :].float()
    per_sentence_conf = (top_weight * q_mask).sum(-1) / q_mask.sum(-1)     # [B, L, H]
    tally.confidence += (top_weight * q_mask).sum((0, 3)).numpy()
    tally.queries += int(query_real.sum())
    tally.sentences += batch
    tally.per_sentence_confidence.extend(per_sentence_conf.numpy())
    if positional:
        offset = _bins(top_key - torch.arange(queries)[None, None, None, :])
        hist = torch.zeros(batch, layers, heads, 2 * OFFSETS + 1)
        hist.scatter_add_(-1, offset, q_mask.expand_as(offset.float()).contiguous())
        tally.offsets += hist.sum(0).numpy()
        tally.per_sentence_offsets.extend(hist.numpy())
    if rarest is not None:
        mean_attention = (patterns * q_mask[..., None]).sum(3) / q_mask.sum(-1)[..., None]    # [B, L, H, K]
        mean_attention = mean_attention.masked_fill(~key_real[:, None, None, :], -1.0)
        hits = mean_attention.argmax(-1) == rarest[:, None, None]
        tally.rare_hits += hits.sum(0).numpy()
        tally.rare_sentences += batch
        tally.rare_chance += float((1.0 / key_real.sum(-1)).sum())


def rarest(ids: torch.Tensor, frequencies: list[int] | None) -> torch.Tensor | None:
    """Position of the least frequent real token in each row (specials and padding never count)."""
    if frequencies is None:
        return None
    counts = torch.tensor(frequencies, dtype=torch.float64)[ids]
    counts = counts.masked_fill((ids == PAD) | (ids == EOS) | (ids == BOS), float("inf"))
    return counts.argmin(-1)


@dataclass
class RolesReport:
    heads: list[dict]           # one entry per head: kind, layer, head, spec, roles, and every score behind them
    thresholds: dict
    corpus: dict                # name, sentences analysed, sentences skipped
    seconds: float

    def to_json(self) -> dict:
        return {"heads": self.heads, "thresholds": self.thresholds, "corpus": self.corpus, "seconds": self.seconds}


def analyse_roles(checkpoint: Checkpoint, trees: list[Tree], thresholds: Thresholds = Thresholds(),
                  kinds: tuple[str, ...] = KINDS, batch_size: int = 64, corpus_name: str = "",
                  progress: Callable[[float], None] | None = None) -> RolesReport:
    started = time.perf_counter()
    model, tokenizer, config = checkpoint.model, checkpoint.tokenizer, checkpoint.model.config
    aligned = [(tree, align_words(tree.words, tokenizer, config.max_len)) for tree in trees]
    usable = [(tree, a) for tree, a in aligned if a is not None]
    order = sorted(range(len(usable)), key=lambda i: len(usable[i][1].ids))
    tallies = {kind: Tally(config.layers(kind), config.heads) for kind in kinds}
    syntax = SyntaxTally()
    frequencies = checkpoint.frequencies or {}
    sentence_order: list[int] = []

    for start in range(0, len(order), batch_size):
        chunk = order[start: start + batch_size]
        sentence_order.extend(chunk)
        src = pad_batch([usable[i][1].ids for i in chunk])
        src_real = src != PAD
        with torch.no_grad():
            wanted = [PATTERN["encoder"].format("*")]
            tgt = None
            if "decoder" in kinds or "cross" in kinds:
                outputs = greedy(model, src).tokens
                tgt = pad_batch([[BOS] + o for o in outputs])
                wanted = list(PATTERN.values())
                wanted = [w.format("*") for w in wanted]
            with capture(model.hook_names, wanted) as cache:
                model.encode(src) if tgt is None else model(src, tgt)
        stacked = {kind: torch.stack([cache[PATTERN[kind].format(layer)] for layer in range(config.layers(kind))], 1)
                   for kind in kinds}
        if "encoder" in kinds:
            tally_patterns(tallies["encoder"], stacked["encoder"], src_real, src_real,
                            rarest(src, frequencies.get("source")), positional=True)
            tally_syntax(syntax, stacked["encoder"].numpy(), [usable[i] for i in chunk])
        if tgt is not None:
            tgt_real = tgt != PAD
            if "decoder" in kinds:
                tally_patterns(tallies["decoder"], stacked["decoder"], tgt_real, tgt_real,
                                rarest(tgt, frequencies.get("target")), positional=True)
            if "cross" in kinds:
                tally_patterns(tallies["cross"], stacked["cross"], tgt_real, src_real,
                                rarest(src, frequencies.get("source")), positional=False)
        if progress:
            progress(min(1.0, (start + len(chunk)) / max(1, len(order))))

    texts = [usable[i][0].text for i in sentence_order]
    heads = []
    for kind in kinds:
        heads.extend(head_results(kind, tallies[kind], syntax if kind == "encoder" else None, thresholds, texts))
    return RolesReport(heads, asdict(thresholds),
                       {"name": corpus_name, "sentences": len(usable), "skipped": len(trees) - len(usable)},
                       round(time.perf_counter() - started, 2))


def tally_syntax(syntax: SyntaxTally, patterns: np.ndarray, sentences: list) -> None:
    """patterns [B, L, H, S, S] of the encoder; per sentence, word-level argmax along each gold arc."""
    for row, (tree, aligned) in enumerate(sentences):
        pieces = len(aligned.ids)
        words = word_attention(patterns[row, :, :, :pieces, :pieces], aligned.word_pieces)   # [L, H, W, W]
        top = words.argmax(-1)                                                              # [L, H, W]
        for dependent, (head, relation) in enumerate(zip(tree.heads, tree.relations)):
            if head < 0 or relation not in RELATIONS:
                continue
            syntax.add(relation, DIRECTIONS[0], top, dependent, head, top.shape[:2])
            syntax.add(relation, DIRECTIONS[1], top, head, dependent, top.shape[:2])


def classify(entry: dict, thresholds: Thresholds) -> tuple[list[str], list[str]]:
    """(roles, syntactic relations) of one head from its scores: re-run with other thresholds at no cost."""
    roles, relations = [], []
    positional = entry.get("positional")
    if positional and positional["share"] >= thresholds.positional:
        roles.append("positional")
    for relation, scores in (entry.get("syntactic") or {}).items():
        for direction, score in scores.items():
            if (score["count"] >= thresholds.syntactic_min_count
                    and score["accuracy"] - score["baseline"] >= thresholds.syntactic_margin):
                relations.append(f"{relation} {direction}")
    if relations:
        roles.append("syntactic")
    rare = entry.get("rare_token")
    if rare and rare["rate"] >= thresholds.rare_rate and rare["rate"] >= thresholds.rare_over_chance * rare["chance"]:
        roles.append("rare-token")
    return roles, relations


def head_results(kind: str, tally: Tally, syntax: SyntaxTally | None, thresholds: Thresholds,
                  texts: list[str]) -> list[dict]:
    results = []
    confidence = tally.confidence / max(1, tally.queries)
    per_sentence_conf = np.array(tally.per_sentence_confidence)
    per_sentence_offsets = np.array(tally.per_sentence_offsets) if tally.per_sentence_offsets else None
    for layer in range(tally.layers):
        for head in range(tally.heads):
            entry = {"kind": kind, "layer": layer, "head": head, "spec": str(HeadSpec(kind, layer, head)),
                     "roles": [], "confidence": round(float(confidence[layer, head]), 4)}
            if per_sentence_offsets is not None:
                histogram = tally.offsets[layer, head] / max(1, tally.queries)
                # The end bins gather every offset beyond ±OFFSETS: not one fixed offset, so never "the" offset.
                best = 1 + int(histogram[1:-1].argmax())
                entry["positional"] = {"offset": best - OFFSETS, "share": round(float(histogram[best]), 4),
                                       "histogram": {str(b - OFFSETS): round(float(v), 4) for b, v in enumerate(histogram)}}
            if tally.rare_sentences:
                entry["rare_token"] = {"rate": round(float(tally.rare_hits[layer, head] / tally.rare_sentences), 4),
                                       "chance": round(tally.rare_chance / tally.rare_sentences, 4)}
            if syntax is not None and syntax.counts:
                entry["syntactic"] = _syntax_scores(syntax, layer, head)
            entry["roles"], entry["syntactic_relations"] = classify(entry, thresholds)
            # Typical sentences: for a positional head, where most tokens use its offset; else its most confident.
            typical = per_sentence_conf[:, layer, head] if len(per_sentence_conf) else np.zeros(0)
            if "positional" in entry["roles"]:
                counts = per_sentence_offsets[:, layer, head]
                typical = counts[:, best] / np.maximum(1, counts.sum(-1))
            entry["examples"] = [texts[i] for i in np.argsort(-typical, kind="stable")[:3]] if len(typical) else []
            results.append(entry)
    return results


def _syntax_scores(syntax: SyntaxTally, layer: int, head: int) -> dict:
    scores: dict = {}
    for (relation, direction), count in sorted(syntax.counts.items()):
        offsets = syntax.offsets[(relation, direction)]
        baseline_offset = max(offsets, key=offsets.get)
        scores.setdefault(relation, {})[direction] = {
            "accuracy": round(float(syntax.hits[(relation, direction)][layer, head] / count), 4),
            "baseline": round(offsets[baseline_offset] / count, 4), "baseline_offset": baseline_offset,
            "count": count}
    return scores


def role_summary(heads: list[dict]) -> dict:
    """One model's roles at a glance: how many heads have each role, and the strongest candidate for each.

    The candidates matter when no head passes a threshold: they say how close the model came.
    """
    def best(candidates):
        return max(candidates, default=None, key=lambda c: c[0])

    positional = best((h["positional"]["share"], h["spec"], h["positional"]["offset"])
                      for h in heads if h.get("positional"))
    rare = best((h["rare_token"]["rate"], h["spec"], h["rare_token"]["chance"]) for h in heads if h.get("rare_token"))
    syntactic = best((score["accuracy"] - score["baseline"], h["spec"], f"{relation} {direction}", score["accuracy"])
                     for h in heads for relation, scores in (h.get("syntactic") or {}).items()
                     for direction, score in scores.items())
    return {
        "heads": len(heads),
        **{role: sum(role in h["roles"] for h in heads) for role in ("positional", "syntactic", "rare-token")},
        "no role": sum(not h["roles"] for h in heads),
        "mean confidence": round(float(np.mean([h["confidence"] for h in heads])), 3) if heads else None,
        "most positional": f"{positional[1]} ({positional[0]:.0%} at {positional[2]:+d})" if positional else None,
        "most rare-token": f"{rare[1]} ({rare[0]:.0%}, chance {rare[2]:.0%})" if rare else None,
        "most syntactic": (f"{syntactic[1]} {syntactic[2]} ({syntactic[3]:.0%}, {syntactic[0]:+.0%} vs baseline)"
                           if syntactic else None),
    }
