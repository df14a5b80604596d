"""Measurements behind the head papers' cards (heads_papers.py): the corpora they read, the analyses they reuse
(shipped with a bundled model, else computed on the budget's sentences), the sentence bootstrap of corpus BLEU, and
small readings of a pruning curve.

Nothing here is new analysis: roles come from explorer/analyses/corpus/roles.py, importance from
explorer/analyses/corpus/importance.py, curves from explorer/analyses/corpus/pruning.py, sink shares from
explorer/analyses/sentence/sinks.py; this module only chooses corpora and sizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from sacrebleu.metrics import BLEU

import explorer.settings as settings
from explorer.analyses.corpus.corpus_scoring import TranslationScorer
from explorer.analyses.corpus.importance import importance_report
from explorer.analyses.corpus.intervals import bootstrap_draws
from explorer.analyses.corpus.roles import analyse_roles
from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, ROLES_FILE, shipped
from explorer.capture.treebank import read_trees
from explorer.models.data import read_lines
from explorer.models.interface import ExplorerModel

MULTI30K = settings.MULTI30K
EWT = settings.TREEBANK
TEXT_NAME, TREEBANK_NAME = "val.en.gz", EWT.name
CURVE_FILE = "head_pruning_curve.json"
BUNDLED = settings.TRANSLATORS

# Roles and gradient importance computed for a model without shipped ones, by (model, target language,
# sentences): Voita's card reads one roles analysis, Voita's and Michel's one importance.
# Tests that plant a head through a hook clear it (the planted model is not the model).
MEMO: dict[tuple, dict] = {}

Progress = Callable[[float], None] | None


def staged(progress: Progress, start: float, weight: float) -> Progress:
    """A progress callback for one stage of a card's work: [0, 1] of the stage → [start, start + weight]."""
    return None if progress is None else (lambda fraction: progress(start + weight * fraction))




def pairs(split: str, count: int) -> tuple[list[str], list[str]]:
    """The first `count` Multi30k sentence pairs of a split (val, test_2016_flickr)."""
    return (read_lines(MULTI30K / f"{split}.en.gz")[:count], read_lines(MULTI30K / f"{split}.de.gz")[:count])


def _key(model: ExplorerModel, *rest) -> tuple:
    return (str(model.path), model.target_language, *rest)


def roles_of(model: ExplorerModel, sentences: int, progress: Progress = None) -> tuple[dict, bool]:
    """(roles report, shipped?): head_roles.json, else analyse_roles on `sentences` Multi30k val sentences and as
    many UD EWT dev trees (the trees only when the model has an encoder: syntax is read where the words are)."""
    report = shipped(model, ROLES_FILE)
    if report is not None:
        return report, True
    key = _key(model, "roles", sentences)
    if key not in MEMO:
        trees = read_trees(EWT, limit=sentences) if model.has("encoder") else None
        MEMO[key] = analyse_roles(model, read_lines(MULTI30K / "val.en.gz")[:sentences], trees,
                                  text_name=TEXT_NAME, treebank_name=TREEBANK_NAME if trees else "",
                                  progress=progress).to_json()
    return MEMO[key], False


def importance_of(model: ExplorerModel, sentences: int, progress: Progress = None) -> tuple[dict, bool]:
    """(importance report, shipped?): head_importance.json, else gradient importance (explorer/analyses/corpus/importance.py, no
    ablations: one backward pass per batch) on `sentences` Multi30k val pairs (translation models: the papers'
    measure is BLEU)."""
    report = shipped(model, IMPORTANCE_FILE)
    if report is not None:
        return report, True
    key = _key(model, "importance", sentences)
    if key not in MEMO:
        scorer = TranslationScorer(model, *pairs("val", sentences))
        MEMO[key] = importance_report(scorer, with_ablation=False, corpus_name=TEXT_NAME, progress=progress)
    return MEMO[key], False


def sentence_statistics(hypotheses: list[str], references: list[str]) -> np.ndarray:
    """sacreBLEU's sufficient statistics per sentence [sentences, 10]: corpus BLEU of any multiset of sentences is
    the score of the sum of their rows."""
    return np.array(BLEU()._extract_corpus_statistics(hypotheses, [references]), dtype=np.int64)


def bootstrap_bleu(hypotheses: list[str], references: list[str], resamples: int = 500,
                   seed: int = 0) -> dict:
    """Corpus BLEU and its sentence-bootstrap 95% interval (percentiles 2.5 and 97.5 of corpus BLEU over
    `resamples` resamples of the sentences with replacement): half-width = (high − low) / 2."""
    stats = sentence_statistics(hypotheses, references)
    scorer = BLEU()
    scores = np.array([scorer._compute_score_from_stats(stats[draw].sum(0).tolist()).score
                       for draw in bootstrap_draws(len(hypotheses), resamples, seed)])
    low, high = np.percentile(scores, [2.5, 97.5])
    return {"bleu": round(scorer._compute_score_from_stats(stats.sum(0).tolist()).score, 2),
            "low": round(float(low), 2), "high": round(float(high), 2),
            "half_width": round(float(high - low) / 2, 3), "sentences": len(hypotheses), "resamples": resamples,
            "seed": seed}


def scaled_half_width(half_width: float, measured_on: int, corpus: int) -> float:
    """The half-width for a corpus of `corpus` sentences from one bootstrapped on `measured_on`: the spread of a
    mean over n sentences shrinks as 1/√n."""
    return round(half_width * math.sqrt(measured_on / max(1, corpus)), 3)


def prunable_share(fractions: list[float], quality: list[float], tolerance: float = 1.0) -> tuple[float, float]:
    """(the last fraction pruned before BLEU first falls more than `tolerance` below the unpruned, the same
    fraction linearly interpolated to where the curve crosses unpruned − tolerance)."""
    floor = quality[0] - tolerance
    for i in range(1, len(fractions)):
        if quality[i] < floor:
            before, after = quality[i - 1], quality[i]
            crossing = fractions[i - 1] + (fractions[i] - fractions[i - 1]) * (before - floor) / (before - after)
            return fractions[i - 1], round(crossing, 3)
    return fractions[-1], fractions[-1]


def shipped_curve(model: ExplorerModel) -> dict | None:
    return shipped(model, CURVE_FILE)
