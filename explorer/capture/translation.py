"""Translating sentences and scoring a corpus, with an optional set of pruned heads."""

from __future__ import annotations

import time

import sacrebleu
import torch
from sacrebleu.metrics import BLEU, CHRF

from explorer.capture.head_sets import HeadSpec, head_mask
from explorer.capture.inputs import prepare_source
from explorer.models.hooks import model_run
from explorer.models.interface import ExplorerModel, Generates


def translate(model: ExplorerModel, sentences: list[str], beam_size: int = 1,
              pruned: list[HeadSpec] | None = None, alpha: float = 0.6, fix_casing: bool = False) -> list[str]:
    """One output per sentence: a translation, or a decoder-only model's continuation. Raises InputError for an
    empty sentence. fix_casing: all-caps and all-lower-case sentences are fed in sentence case
    (inputs.sentence_case)."""
    ids = [prepare_source(s, model, fix_casing).ids for s in sentences]      # InputError for a model of images
    assert isinstance(model, Generates)             # only a model that writes is asked to (callers check)
    with torch.no_grad(), model_run(head_mask=head_mask(pruned or [], model)):
        outputs = model.generate(ids, beam_size, alpha)
    return [model.detokenize(o) for o in outputs]


def usable_pairs(sources: list[str], references: list[str]) -> list[int]:
    """The one rule for blank lines, in the CLI, the pages and the analyses alike: a pair whose source or
    reference is blank is left out (a blank source cannot be translated, a blank reference cannot be matched)."""
    return [i for i, (s, r) in enumerate(zip(sources, references)) if s.strip() and r.strip()]


def bleu(hypotheses: list[str], references: list[str]) -> float:
    """Corpus BLEU: sacreBLEU, 13a tokenization, cased, detokenized — every score in the project."""
    return sacrebleu.corpus_bleu(hypotheses, [references]).score


def evaluate(model: ExplorerModel, sources: list[str], references: list[str], beam_size: int = 1,
             pruned: list[HeadSpec] | None = None, alpha: float = 0.6, fix_casing: bool = False) -> dict:
    """BLEU and chrF of the translations of sources against references (pairs with a blank side left out)."""
    started = time.perf_counter()
    stats = evaluation_statistics(model, sources, references, beam_size, pruned, alpha, fix_casing)
    return dict(evaluation_scores([stats], len(sources)), seconds=round(time.perf_counter() - started, 2))


def evaluation_statistics(model: ExplorerModel, sources: list[str], references: list[str], beam_size: int = 1,
                          pruned: list[HeadSpec] | None = None, alpha: float = 0.6, fix_casing: bool = False) -> dict:
    """What these pairs add to a corpus's BLEU and chrF: sacreBLEU's statistics (sums, so the statistics of
    shards add up to the corpus's, in one process or on Ray workers)."""
    kept = usable_pairs(sources, references)
    hypotheses = translate(model, [sources[i] for i in kept], beam_size, pruned, alpha, fix_casing) if kept else []
    kept_references = [references[i] for i in kept]
    return {"bleu": bleu_statistics(hypotheses, kept_references), "chrf": chrf_statistics(hypotheses, kept_references),
            "sentences": len(hypotheses)}


def evaluation_scores(parts: list[dict], pairs: int) -> dict:
    """BLEU and chrF from the statistics of one corpus or of its shards (of `pairs` given, blank ones left out)."""
    bleu_score, chrf = bleu_and_chrf([sum(column) for column in zip(*(p["bleu"] for p in parts))],
                                     [sum(column) for column in zip(*(p["chrf"] for p in parts if p["chrf"]))])
    sentences = sum(p["sentences"] for p in parts)
    return {"bleu": round(bleu_score, 2), "chrf": round(chrf, 2), "sentences": sentences, "skipped": pairs - sentences}


def bleu_statistics(hypotheses: list[str], references: list[str]) -> list[int]:
    """sacreBLEU's sufficient statistics of a set of translations (n-gram matches and totals, lengths), summed."""
    per_sentence = BLEU()._extract_corpus_statistics(hypotheses, [references]) if hypotheses else []
    return [int(sum(column)) for column in zip(*per_sentence)] if per_sentence else [0] * 10


def chrf_statistics(hypotheses: list[str], references: list[str]) -> list[int]:
    """sacreBLEU's chrF statistics of a set of translations (character and word n-gram counts), summed."""
    per_sentence = CHRF()._extract_corpus_statistics(hypotheses, [references]) if hypotheses else []
    return [int(sum(column)) for column in zip(*per_sentence)] if per_sentence else []


def bleu_and_chrf(bleu_stats: list[int], chrf_stats: list[int]) -> tuple[float, float]:
    """Corpus BLEU and chrF from summed statistics (what sacrebleu.corpus_bleu / corpus_chrf compute)."""
    chrf = CHRF()._compute_score_from_stats(chrf_stats).score if chrf_stats else 0.0
    return BLEU()._compute_score_from_stats(bleu_stats).score, chrf
