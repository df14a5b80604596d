"""Head roles over a corpus, after Voita et al. 2019: positional, syntactic, rare-token; and confidence.

Two corpora, each where it means something:
- Plain in-domain sentences (one per line; the shipped analyses use Multi30k val) for positional, rare-token
  and confidence statistics. The encoder reads each sentence; for decoder self-attention and cross-attention
  the model's own greedy translation is fed back (teacher forcing), so those heads are measured on what they
  really see. Queries that are special tokens (`</s>` in the encoder, `<s>` in the decoder, which has one key
  and always scores 1.0) are left out.
- A treebank (CoNLL-U) for syntactic roles, encoder only, reported over all sentences and over those of at
  most `SHORT_PIECES` pieces (long web sentences dilute every statistic).

- Positional: for at least `positional` (90%) of query tokens, the largest weight sits at one relative offset
  (with the share's sentence-bootstrap 95% interval). Measured for self-attention (encoder, decoder);
  cross-attention has no shared positions.
- Syntactic: word-level attention (Clark et al. 2019) on the sentence as written, tokenized once (CoNLL-U's
  SpaceAfter=No respected: models/word_alignment.py), each word pooled from its pieces and each special token
  (</s>) kept as a key of its own, so a head whose largest weight is on </s> misses, as in Voita et al.'s token
  argmax; for each relation and direction, how often the largest weight from one word lands on the other, against
  the positional baseline (always guessing the relation's most frequent offset). Syntactic when it beats the
  baseline by `syntactic_margin` (10 points) over at least `syntactic_min_count` (100) occurrences, over all
  treebank sentences.
- Rare-token: how often the head's attention averaged over queries peaks on the sentence's least frequent
  token (training-corpus frequency when the model has it, else frequency in the text given; ties for the
  rarest all count as hits), over the sentences whose rarest token is not among the 500 most frequent (Voita
  et al.'s §5.3 filter; `common_top`). Chance is the share of keys that are (tied) rarest among the keys that
  can be rarest at all (special tokens never are). Rare-token when that
  happens in at least `rare_rate` (50%) of sentences and at least `rare_over_chance` (3×) chance: 50% means
  the head picks the rarest token over all others more often than not, the behaviour Voita et al. describe,
  and 3× chance guards very short sentences. The rarest-or-second-rarest rate (Voita et al.'s own measure) is
  reported beside it.
- Confidence: mean over queries of the largest weight (Voita et al.).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from explorer.analyses.corpus.head_tallies import (
    OFFSETS,
    RoleTallies,
    SyntaxTally,
    Tally,
    common_count,
    counted_frequencies,
    key_counts,
    real_tokens,
    tally_patterns,
    tally_syntax,
)
from explorer.analyses.corpus.intervals import ratio_intervals
from explorer.analyses.corpus.results import HeadRoles, RolesReport
from explorer.analyses.defaults import DEFAULT_THRESHOLDS, RARE_COMMON_TOP, THRESHOLD_SOURCES, Thresholds
from explorer.capture.head_sets import HeadSpec
from explorer.capture.treebank import Tree
from explorer.models.hooks import capture
from explorer.models.interface import Batch, ExplorerModel
from explorer.models.tokenizer import clean_text
from explorer.models.vocabulary import ATTENTION_KINDS, Kind, Side, attention_hook

SHORT_PIECES = 25                     # syntactic scores are also reported over treebank sentences this short


@dataclass
class RolesFindings:
    """A report as analyse_roles computes it, its heads in their JSON form; results.RolesReport reads it by field."""
    heads: list[dict]           # one entry per head: kind, layer, head, spec, roles, and every score behind them
    thresholds: dict
    corpus: dict                # "text" and/or "treebank": name, sentences analysed, skipped
    seconds: float
    threshold_sources: dict     # each threshold's origin: the paper's or this project's own (defaults.py)

    def to_json(self) -> dict:
        return {"heads": self.heads, "thresholds": self.thresholds, "threshold_sources": self.threshold_sources,
                "corpus": self.corpus, "seconds": self.seconds}


def is_real_sentence(text: str) -> bool:
    """Words, mostly letters: typical examples must never be symbol runs such as `A ++` or `•••`."""
    words = [w for w in text.split() if re.search(r"[^\W\d_]", w)]
    letters = sum(ch.isalpha() for ch in text)
    return len(words) >= 5 and letters >= 0.6 * len(text.replace(" ", ""))


def batches_by_length(items: list, lengths: list[int], batch_size: int):
    """Indices of items in batches of similar length (less padding)."""
    order = sorted(range(len(items)), key=lambda i: lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start: start + batch_size]


def read_by(model: ExplorerModel, sources: list[list[int]], outputs: list[list[int]] | None
            ) -> tuple[Batch | None, Batch | None]:
    """What the model reads for these sources: the encoder the source, the decoder its own output fed back
    (teacher forcing), or a decoder-only model the source itself."""
    encoder = model.pad(sources) if model.has("encoder") else None
    if not model.has("decoder"):
        return encoder, None
    if outputs is None:
        outputs = [[] for _ in sources]
    return encoder, model.pad([model.decoder_input(s, o)[0] for s, o in zip(sources, outputs)])


def statistics_pass(model: ExplorerModel, sentences: list[list[int]], kinds: tuple[str, ...], batch_size: int,
                    progress: Callable[[float], None] | None, common_top: int = RARE_COMMON_TOP
                    ) -> tuple[dict[str, Tally], list[int]]:
    """Positional, rare-token and confidence tallies over source id lists; also the order they were seen in.
    A translation model's decoder reads its own greedy output; a decoder-only model reads the text itself."""
    translates = model.has("encoder") and model.has("decoder")
    # Decoding is most of a pass's time, and only the kinds whose queries are the output read it.
    decodes = translates and any(Kind(kind).query_side is Side.TARGET for kind in kinds)
    with torch.no_grad():
        outputs = model.generate(sentences) if decodes else None
    rows = {"source": sentences, "target": [model.decoder_input(s, o)[0] for s, o in zip(sentences, outputs)]
            if outputs is not None else sentences}
    size = 1 + max([model.pad_id, *(max(row) for row in rows["source"] + rows["target"] if row)])
    frequencies = model.token_frequencies or {}
    counts = {side: (torch.tensor(frequencies[side], dtype=torch.float64) if side in frequencies
                     else counted_frequencies(rows[side], size)) for side in rows}
    common = {side: common_count(counts[side], common_top) for side in rows}
    tallies = {kind: Tally(model.layers(kind), model.heads) for kind in kinds}
    seen: list[int] = []
    for chunk in batches_by_length(sentences, [len(s) for s in sentences], batch_size):
        seen.extend(chunk)
        encoder, decoder = read_by(model, [sentences[i] for i in chunk],
                                   [outputs[i] for i in chunk] if outputs is not None else None)
        with torch.no_grad(), capture(model.hook_names, [attention_hook(kind, "*", "pattern") for kind in kinds]) as cache:
            model.forward(encoder, decoder)
        read = {}
        for side, batch in ((Side.SOURCE, encoder), (Side.TARGET, decoder)):
            if batch is not None:
                real = real_tokens(batch.ids, batch.present, model.special_ids)
                read[side] = (batch, real, key_counts(batch.ids, real, counts[side]))
        for kind in kinds:
            queries, keys = read[Kind(kind).query_side], read[Kind(kind).key_side]
            tally_patterns(tallies[kind], cache.layers(kind, "pattern"), queries[1], keys[0].present, keys[2],
                           Kind(kind).is_self, common[Kind(kind).key_side])
        if progress:
            progress(len(seen) / max(1, len(sentences)))
    return tallies, seen


def syntax_pass(model: ExplorerModel, trees: list[Tree], kind: str, batch_size: int,
                progress: Callable[[float], None] | None) -> tuple[SyntaxTally, SyntaxTally, int]:
    """Attention of `kind` (the stack that reads the text) along gold arcs: (all sentences, sentences of
    ≤ SHORT_PIECES pieces, skipped trees)."""
    aligned = [(tree, model.align_words(tree.words, tree.space_after)) for tree in trees]
    usable = [(tree, a) for tree, a in aligned if a is not None]
    every, short = SyntaxTally(), SyntaxTally()
    done = 0
    for chunk in batches_by_length(usable, [len(a.ids) for _, a in usable], batch_size):
        encoder, decoder = read_by(model, [usable[i][1].ids for i in chunk], None)
        with torch.no_grad(), capture(model.hook_names, attention_hook(kind, "*", "pattern")) as cache:
            model.forward(encoder, None if encoder is not None else decoder)
        patterns = cache.layers(kind, "pattern").cpu().numpy()
        sentences = [usable[i] for i in chunk]
        tally_syntax(every, patterns, sentences)
        short_rows = [row for row, (_, a) in enumerate(sentences) if sum(map(len, a.word_pieces)) <= SHORT_PIECES]
        tally_syntax(short, patterns[short_rows], [sentences[row] for row in short_rows])
        done += len(chunk)
        if progress:
            progress(done / max(1, len(usable)))
    return every, short, len(trees) - len(usable)


def role_tallies(model: ExplorerModel, sentences: list[str], trees: list[Tree] | None,
                 kinds: tuple[str, ...], batch_size: int = 64,
                 progress: Callable[[float], None] | None = None, common_top: int = RARE_COMMON_TOP) -> RoleTallies:
    """The tallies of positional, rare-token, confidence and syntactic statistics over plain sentences and trees."""
    reading = "encoder" if model.has("encoder") else "decoder"     # the stack that reads the text
    kinds = tuple(kind for kind in kinds if model.layers(kind))    # the kinds the model has
    texts = [t for t in (clean_text(s) for s in sentences) if t]
    syntax_kind = reading if reading in kinds else None            # syntax is read where the words are read
    share = 0.5 if trees and syntax_kind else 1.0
    staged = lambda offset, weight: None if progress is None else (lambda f: progress(offset + weight * f))  # noqa: E731
    ids = [model.encode(t).ids for t in texts]
    tallies, seen = statistics_pass(model, ids, kinds, batch_size, staged(0.0, share), common_top)
    result = RoleTallies(tallies, [texts[i] for i in seen], list(seen), len(sentences) - len(texts),
                         syntax_kind=syntax_kind)
    if trees and syntax_kind:
        result.every, result.short, result.skipped_trees = syntax_pass(model, trees, syntax_kind, batch_size,
                                                                       staged(share, 1 - share))
    return result


def roles_report(tallied: RoleTallies, thresholds: Thresholds, text_name: str, treebank_name: str, trees: int,
                 seconds: float, common_top: int) -> RolesFindings:
    """Every head's roles and the scores behind them, from the tallies (common_top: the rare-token filter they
    were counted with)."""
    corpus = {"text": {"name": text_name, "sentences": len(tallied.texts), "skipped": tallied.skipped_lines,
                       "rare_common_top": common_top}}
    if tallied.every is not None:
        corpus["treebank"] = {"name": treebank_name, "sentences": trees - tallied.skipped_trees,
                              "skipped": tallied.skipped_trees, "short_sentences": tallied.short.sentences,
                              "short_pieces": SHORT_PIECES}
    # Per-sentence statistics in the order the sentences were given, whatever order batches (or shards) saw
    # them in: the typical sentences of a head are then the same however the work was split.
    given = np.argsort(tallied.order, kind="stable")
    texts = [tallied.texts[i] for i in given]
    heads = []
    for kind, tally in tallied.tallies.items():
        syntax = (tallied.every, tallied.short) if kind == tallied.syntax_kind and tallied.every is not None else None
        ordered = replace(tally, per_sentence_confidence=[tally.per_sentence_confidence[i] for i in given],
                          per_sentence_offsets=[tally.per_sentence_offsets[i] for i in given]
                          if tally.per_sentence_offsets else [])
        heads.extend(head_results(kind, ordered, syntax, thresholds, texts))
    return RolesFindings(heads, asdict(thresholds), corpus, round(seconds, 2), dict(THRESHOLD_SOURCES))


def analyse_roles(model: ExplorerModel, sentences: list[str] | None = None, trees: list[Tree] | None = None,
                  thresholds: Thresholds = DEFAULT_THRESHOLDS, kinds: tuple[str, ...] = ATTENTION_KINDS,
                  batch_size: int = 64, text_name: str = "", treebank_name: str = "",
                  progress: Callable[[float], None] | None = None, tallies_of=None,
                  common_top: int = RARE_COMMON_TOP) -> RolesFindings:
    """Roles of every head: statistics on `sentences` (plain text; the trees' own text when only trees are
    given), syntactic scores on `trees` (if any). tallies_of: computes the tallies elsewhere (on Ray), with
    role_tallies' arguments. common_top: the rare-token statistics leave out sentences whose rarest token is among
    the `common_top` most frequent (Voita et al.'s 500; 0 keeps every sentence)."""
    if not sentences and not trees:
        raise ValueError("analyse_roles needs sentences, trees or both")
    started = time.perf_counter()
    if not sentences:
        sentences, text_name = [tree.text for tree in trees], treebank_name
    tallied = (tallies_of or role_tallies)(model, sentences, trees, kinds, batch_size, progress, common_top)
    return roles_report(tallied, thresholds, text_name, treebank_name, len(trees or []),
                        time.perf_counter() - started, common_top)


def corpus_description(report: RolesReport | dict) -> str:
    """Where a roles report was measured, in words."""
    corpus = RolesReport.from_json(report).corpus
    parts = []
    if corpus.text:
        parts.append(f"positional, rare-token and confidence on {corpus.text.name or 'a text'} "
                     f"({corpus.text.sentences} sentences)")
    if corpus.treebank:
        bank = corpus.treebank
        parts.append(f"syntactic on {bank.name or 'a treebank'} ({bank.sentences} trees, "
                     f"{bank.short_sentences or 0} of ≤ {bank.short_pieces or SHORT_PIECES} pieces)")
    if not parts and "sentences" in corpus.extra:   # a report written before the text / treebank split
        parts.append(f"all statistics on {corpus.extra.get('name') or 'a corpus'} "
                     f"({corpus.extra['sentences']} sentences)")
    return "; ".join(parts)


def classify(entry: HeadRoles | dict, thresholds: Thresholds) -> tuple[list[str], list[str]]:
    """(roles, syntactic relations) of one head from its scores: re-run with other thresholds at no cost. Read in
    the head's JSON form, so an entry being built (head_results) and one read back classify alike."""
    entry = entry.to_json() if isinstance(entry, HeadRoles) else entry
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


def reclassified(report: RolesReport | dict, thresholds: Thresholds) -> list[HeadRoles]:
    """The report's heads with roles (and syntactic relations) recomputed at other thresholds."""
    entries = []
    for head in RolesReport.from_json(report).heads:
        roles, relations = classify(head, thresholds)
        entries.append(replace(head, roles=roles, syntactic_relations=relations))
    return entries


def head_results(kind: str, tally: Tally, syntax: tuple[SyntaxTally, SyntaxTally] | None, thresholds: Thresholds,
                  texts: list[str]) -> list[dict]:
    """One JSON-ready entry per head of `kind`; syntax is (all sentences, short sentences) for the encoder."""
    results = []
    confidence = tally.confidence / max(1, tally.queries)
    per_sentence_conf = np.array(tally.per_sentence_confidence)
    per_sentence_offsets = np.array(tally.per_sentence_offsets) if tally.per_sentence_offsets else None
    real = np.array([is_real_sentence(t) for t in texts], dtype=bool)
    if per_sentence_offsets is not None:       # each head's share at each offset, its sentence-bootstrap interval
        queries = per_sentence_offsets.sum(-1, keepdims=True)
        share_low, share_high = ratio_intervals(per_sentence_offsets,
                                                np.broadcast_to(queries, per_sentence_offsets.shape))
    for layer in range(tally.layers):
        for head in range(tally.heads):
            entry = {"kind": kind, "layer": layer, "head": head, "spec": str(HeadSpec(kind, layer, head)),
                     "roles": [], "confidence": round(float(confidence[layer, head]), 4)}
            if per_sentence_offsets is not None:
                histogram = tally.offsets[layer, head] / max(1, tally.queries)
                # The end bins gather every offset beyond ±OFFSETS: not one fixed offset, so never "the" offset.
                best = 1 + int(histogram[1:-1].argmax())
                entry["positional"] = {"offset": best - OFFSETS, "share": round(float(histogram[best]), 4),
                                       "low": round(float(share_low[layer, head, best]), 4),
                                       "high": round(float(share_high[layer, head, best]), 4),
                                       "histogram": {str(b - OFFSETS): round(float(v), 4) for b, v in enumerate(histogram)}}
            if tally.rare_sentences:
                n = tally.rare_sentences
                entry["rare_token"] = {"rate": round(float(tally.rare_hits[layer, head] / n), 4),
                                       "chance": round(tally.rare_chance / n, 4),
                                       "rate_top2": round(float(tally.rare_hits_top2[layer, head] / n), 4),
                                       "chance_top2": round(tally.rare_chance_top2 / n, 4), "sentences": n}
            if syntax is not None and syntax[0].counts:
                entry["syntactic"] = _syntax_scores(syntax[0], layer, head)
                if syntax[1].counts:
                    entry["syntactic_short"] = _syntax_scores(syntax[1], layer, head)
            entry["roles"], entry["syntactic_relations"] = classify(entry, thresholds)
            entry["examples"] = typical_sentences(entry, layer, head, best if per_sentence_offsets is not None else None,
                                                  per_sentence_conf, per_sentence_offsets, real, texts)
            results.append(entry)
    return results


def typical_sentences(entry: dict, layer: int, head: int, offset_bin: int | None, per_sentence_conf: np.ndarray,
                      per_sentence_offsets: np.ndarray | None, real: np.ndarray, texts: list[str]) -> list[str]:
    """Three real sentences where the head behaves most typically: for a positional head, where most tokens
    use its offset; otherwise where it is most confident."""
    if not len(per_sentence_conf):
        return []
    typical = per_sentence_conf[:, layer, head].copy()
    if "positional" in entry["roles"] and offset_bin is not None:
        counts = per_sentence_offsets[:, layer, head]
        typical = counts[:, offset_bin] / np.maximum(1, counts.sum(-1))
    typical[~real[: len(typical)]] = -np.inf
    return [texts[i] for i in np.argsort(-typical, kind="stable")[:3] if np.isfinite(typical[i])]


def _syntax_scores(syntax: SyntaxTally, layer: int, head: int) -> dict:
    scores: dict = {}
    for (relation, direction), count in sorted(syntax.counts.items()):
        offsets = syntax.offsets[(relation, direction)]
        # The most frequent offset; on a tie the nearer one (then the left one), whatever order trees came in.
        baseline_offset = max(offsets, key=lambda offset: (offsets[offset], -abs(offset), -offset))
        scores.setdefault(relation, {})[direction] = {
            "accuracy": round(float(syntax.hits[(relation, direction)][layer, head] / count), 4),
            "baseline": round(offsets[baseline_offset] / count, 4), "baseline_offset": baseline_offset,
            "count": count}
    return scores


def role_summary(heads: list[HeadRoles] | list[dict]) -> dict:
    """One model's roles at a glance: how many heads have each role, and the strongest candidate for each.

    The candidates matter when no head passes a threshold: they say how close the model came. Read in the heads'
    JSON form, as classify reads them.
    """
    heads = [h.to_json() if isinstance(h, HeadRoles) else h for h in heads]

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
