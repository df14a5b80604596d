"""The counts a pass over a corpus keeps per head (explorer/analyses/corpus/roles.py reads them into roles): offsets of
each query's largest weight, confidence, hits on the rarest token, and word-level hits along gold dependency arcs.
Additive over shards of a corpus (merge_tallies), which is how Ray workers split a roles run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.capture.treebank import word_attention

RELATIONS = ("nsubj", "obj", "amod", "advmod", "det", "nmod", "case", "compound")
DIRECTIONS = ("dependent→head", "head→dependent")
OFFSETS = 8                           # histogram bins: ≤ −8, −7 … +7, ≥ +8


@dataclass
class Tally:
    """Running counts for one attention kind, each [layers, heads] unless said otherwise."""

    layers: int
    heads: int
    queries: int = 0
    sentences: int = 0
    confidence: np.ndarray = None
    offsets: np.ndarray = None           # [layers, heads, 2 * OFFSETS + 1]
    rare_hits: np.ndarray = None         # peak on the (tied) rarest key
    rare_hits_top2: np.ndarray = None    # peak on the rarest or second-rarest key
    rare_sentences: int = 0
    rare_chance: float = 0.0              # sums over sentences of the chance of a hit
    rare_chance_top2: float = 0.0
    per_sentence_confidence: list = field(default_factory=list)   # [layers, heads] per sentence
    per_sentence_offsets: list = field(default_factory=list)      # [layers, heads, bins] per sentence

    def __post_init__(self) -> None:
        if self.confidence is not None:       # a copy (dataclasses.replace) keeps its counts
            return
        shape = (self.layers, self.heads)
        self.confidence = np.zeros(shape)
        self.offsets = np.zeros(shape + (2 * OFFSETS + 1,))
        self.rare_hits, self.rare_hits_top2 = np.zeros(shape), np.zeros(shape)


@dataclass
class SyntaxTally:
    hits: dict = field(default_factory=dict)       # (relation, direction) -> [layers, heads]
    counts: dict = field(default_factory=dict)     # (relation, direction) -> occurrences
    offsets: dict = field(default_factory=dict)    # (relation, direction) -> {offset: occurrences}
    sentences: int = 0

    def add(self, relation: str, direction: str, top: np.ndarray, source: int, target: int, shape) -> None:
        key = (relation, direction)
        self.hits.setdefault(key, np.zeros(shape))
        self.hits[key] += top[:, :, source] == target
        self.counts[key] = self.counts.get(key, 0) + 1
        offsets = self.offsets.setdefault(key, {})
        offsets[target - source] = offsets.get(target - source, 0) + 1


def _bins(offset: torch.Tensor) -> torch.Tensor:
    return offset.clamp(-OFFSETS, OFFSETS) + OFFSETS


def real_tokens(ids: torch.Tensor, present: torch.Tensor, special_ids) -> torch.Tensor:
    """True where a position holds a word piece: present (not padding) and not a special token."""
    return present & ~torch.isin(ids, torch.tensor(sorted(special_ids), dtype=ids.dtype))


def key_counts(ids: torch.Tensor, real: torch.Tensor, frequencies: torch.Tensor | None) -> torch.Tensor | None:
    """Frequency of each key [B, K]; +inf where a key can never be the rarest (specials, padding)."""
    if frequencies is None:
        return None
    return frequencies[ids.clamp_max(len(frequencies) - 1)].masked_fill(~real, float("inf"))


def counted_frequencies(rows: list[list[int]], size: int) -> torch.Tensor:
    """Piece counts over rows of ids: "rare" in the text given, when the model has no training-corpus counts."""
    counts = torch.zeros(size, dtype=torch.float64)
    for row in rows:
        counts += torch.bincount(torch.tensor(row, dtype=torch.long), minlength=size).double()[:size]
    return counts


def common_count(frequencies: torch.Tensor, top: int) -> float:
    """The count from which a token is among the `top` most frequent (-inf for top 0: no token is). A sentence
    whose rarest token counts this much or more has no rare token to find (Voita et al. 2019, §5.3); with fewer
    than `top` distinct tokens counted, every token is among them."""
    if top <= 0:
        return float("-inf")
    ordered = frequencies.sort(descending=True).values
    return float(ordered[top - 1]) if len(ordered) >= top and ordered[top - 1] > 0 else 1.0


def tally_patterns(tally: Tally, patterns: torch.Tensor, query_real: torch.Tensor, key_real: torch.Tensor,
                    counts: torch.Tensor | None, positional: bool, common: float = float("-inf")) -> None:
    """patterns [B, L, H, Q, K]; query_real [B, Q] (queries to count), key_real [B, K] (keys that exist);
    counts [B, K] key frequencies from key_counts (or None: no rare-token statistics); common: common_count's
    answer (sentences whose rarest key counts this much are left out of the rare-token statistics)."""
    batch, layers, heads, queries, keys = patterns.shape
    top_key = patterns.argmax(-1)                                          # [B, L, H, Q]
    top_weight = patterns.max(-1).values
    q_mask = query_real[:, None, None, :].float()
    q_total = q_mask.sum(-1).clamp_min(1)
    per_sentence_conf = (top_weight * q_mask).sum(-1) / q_total            # [B, L, H]
    tally.confidence += (top_weight * q_mask).sum((0, 3)).cpu().numpy()
    tally.queries += int(query_real.sum())
    tally.sentences += batch
    tally.per_sentence_confidence.extend(per_sentence_conf.cpu().numpy())
    if positional:
        offset = _bins(top_key - torch.arange(queries)[None, None, None, :])
        hist = torch.zeros(batch, layers, heads, 2 * OFFSETS + 1)
        hist.scatter_add_(-1, offset, q_mask.expand_as(offset.float()).contiguous())
        tally.offsets += hist.sum(0).cpu().numpy()
        tally.per_sentence_offsets.extend(hist.cpu().numpy())
    if counts is not None:
        tally_rare(tally, patterns, q_mask, q_total, key_real, counts, common)


def tally_rare(tally: Tally, patterns: torch.Tensor, q_mask: torch.Tensor, q_total: torch.Tensor,
               key_real: torch.Tensor, counts: torch.Tensor, common: float) -> None:
    """Where each head's attention, averaged over the counted queries, peaks: on the rarest key or not."""
    candidates = torch.isfinite(counts).sum(-1)                            # keys that can be rarest
    usable = (candidates >= 2) & (q_mask[:, 0, 0].sum(-1) > 0)             # a choice to make, and queries to make it
    if common > float("-inf"):
        usable &= counts.min(-1).values < common                           # a rare token to find (§5.3)
    if not usable.any():
        return
    mean_attention = (patterns * q_mask[..., None]).sum(3) / q_total[..., None]     # [B, L, H, K]
    mean_attention = mean_attention.masked_fill(~key_real[:, None, None, :], -1.0)
    peak = mean_attention.argmax(-1)                                                # [B, L, H]
    peak_count = counts[torch.arange(len(counts))[:, None, None], peak]            # frequency of the peak key
    ordered = counts.sort(-1).values
    rarest, second = ordered[:, :1], ordered[:, 1:2]
    hits = peak_count == rarest[:, :, None]                                # ties for the rarest all count
    hits_top2 = peak_count <= second[:, :, None]
    weights = usable.double()
    tally.rare_hits += (hits.double() * weights[:, None, None]).sum(0).cpu().numpy()
    tally.rare_hits_top2 += (hits_top2.double() * weights[:, None, None]).sum(0).cpu().numpy()
    tally.rare_sentences += int(usable.sum())
    share = lambda bound: ((counts <= bound).sum(-1).double() / candidates.clamp_min(1))   # noqa: E731
    tally.rare_chance += float((share(rarest) * weights).sum())
    tally.rare_chance_top2 += float((share(second) * weights).sum())


@dataclass
class RoleTallies:
    """Everything the roles are computed from: additive over shards of the corpora (merge_tallies)."""

    tallies: dict[str, Tally]
    texts: list[str]                     # the sentences in the order the tallies saw them (batched by length)
    order: list[int]                     # … and where each stands among the sentences as given
    skipped_lines: int                   # blank lines of the plain text
    every: SyntaxTally | None = None     # all treebank sentences
    short: SyntaxTally | None = None     # those of ≤ SHORT_PIECES pieces
    skipped_trees: int = 0
    syntax_kind: str | None = None


def merge_tallies(parts: list[RoleTallies]) -> RoleTallies:
    """The tallies of shards (in order) as those of the whole corpus: sums, counts and per-sentence lists joined."""
    first = parts[0]
    tallies = {}
    for kind, tally in first.tallies.items():
        merged = Tally(tally.layers, tally.heads)
        for part in parts:
            other = part.tallies[kind]
            for name in ("queries", "sentences", "rare_sentences", "rare_chance", "rare_chance_top2", "confidence",
                         "offsets", "rare_hits", "rare_hits_top2"):
                setattr(merged, name, getattr(merged, name) + getattr(other, name))
            merged.per_sentence_confidence.extend(other.per_sentence_confidence)
            merged.per_sentence_offsets.extend(other.per_sentence_offsets)
        tallies[kind] = merged
    order, offset = [], 0
    for part in parts:                    # shard-local positions → positions in the whole corpus
        order += [offset + i for i in part.order]
        offset += len(part.texts)
    result = RoleTallies(tallies, [t for part in parts for t in part.texts], order,
                         sum(p.skipped_lines for p in parts), syntax_kind=first.syntax_kind,
                         skipped_trees=sum(p.skipped_trees for p in parts))
    if any(part.every is not None for part in parts):
        result.every = merge_syntax([p.every for p in parts if p.every is not None])
        result.short = merge_syntax([p.short for p in parts if p.short is not None])
    return result


def merge_syntax(parts: list[SyntaxTally]) -> SyntaxTally:
    merged = SyntaxTally()
    for part in parts:
        merged.sentences += part.sentences
        for key, hits in part.hits.items():
            merged.hits[key] = merged.hits.get(key, 0) + hits
            merged.counts[key] = merged.counts.get(key, 0) + part.counts[key]
            offsets = merged.offsets.setdefault(key, {})
            for offset, count in part.offsets[key].items():
                offsets[offset] = offsets.get(offset, 0) + count
    return merged


def tally_syntax(syntax: SyntaxTally, patterns: np.ndarray, sentences: list) -> None:
    """patterns [B, L, H, S, S] of the encoder; per sentence, word-level argmax along each gold arc."""
    syntax.sentences += len(sentences)
    for row, (tree, aligned) in enumerate(sentences):
        pieces = len(aligned.ids)
        words = word_attention(patterns[row, :, :, :pieces, :pieces], aligned.word_pieces)   # [L, H, W, W]
        top = words.argmax(-1)                                                              # [L, H, W]
        for dependent, (head, relation) in enumerate(zip(tree.heads, tree.relations)):
            if head < 0 or relation not in RELATIONS:
                continue
            syntax.add(relation, DIRECTIONS[0], top, dependent, head, top.shape[:2])
            syntax.add(relation, DIRECTIONS[1], top, head, dependent, top.shape[:2])
