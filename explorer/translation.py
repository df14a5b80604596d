"""Translating sentences and scoring a corpus, with an optional set of pruned heads."""

from __future__ import annotations

import time

import sacrebleu

import torch

from models.hooks import model_run
from models.interface import ExplorerModel
from explorer.head_sets import HeadSpec, head_mask
from explorer.inputs import prepare_source


def translate(model: ExplorerModel, sentences: list[str], beam_size: int = 1,
              pruned: list[HeadSpec] | None = None, alpha: float = 0.6, fix_casing: bool = True) -> list[str]:
    """One output per sentence: a translation, or a decoder-only model's continuation. Raises InputError for an
    empty sentence. fix_casing: all-caps and all-lower-case sentences are fed in sentence case
    (inputs.sentence_case)."""
    ids = [prepare_source(s, model, fix_casing).ids for s in sentences]
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


def evaluate(checkpoint: ExplorerModel, sources: list[str], references: list[str], beam_size: int = 1,
             pruned: list[HeadSpec] | None = None, alpha: float = 0.6, fix_casing: bool = True) -> dict:
    """BLEU and chrF of the translations of sources against references (pairs with a blank side left out)."""
    started = time.perf_counter()
    kept = usable_pairs(sources, references)
    hypotheses = translate(checkpoint, [sources[i] for i in kept], beam_size, pruned, alpha, fix_casing) if kept else []
    return dict(scores_of(hypotheses, [references[i] for i in kept], len(sources)),
                seconds=round(time.perf_counter() - started, 2))


def scores_of(hypotheses: list[str], references: list[str], pairs: int) -> dict:
    """BLEU and chrF of translations of the usable pairs (of `pairs` given; the others had a blank side)."""
    return {"bleu": round(bleu(hypotheses, references), 2),
            "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
            "sentences": len(hypotheses), "skipped": pairs - len(hypotheses)}
