"""Translating sentences and scoring a corpus, with an optional set of pruned heads."""

from __future__ import annotations

import time

import sacrebleu

from models.checkpoint import Checkpoint
from models.decoding import translate_ids
from models.hooks import model_run
from explorer.heads import HeadSpec, head_mask
from explorer.inputs import prepare_source


def translate(checkpoint: Checkpoint, sentences: list[str], beam_size: int = 1,
              pruned: list[HeadSpec] | None = None, alpha: float = 0.6) -> list[str]:
    """One German translation per English sentence. Raises InputError for an empty sentence."""
    max_len = checkpoint.model.config.max_len
    ids = [prepare_source(s, checkpoint.tokenizer, max_len).ids for s in sentences]
    with model_run(head_mask=head_mask(pruned or [], checkpoint.model.config)):
        outputs = translate_ids(checkpoint.model, ids, beam_size=beam_size, alpha=alpha)
    return [checkpoint.tokenizer.decode(o) for o in outputs]


def evaluate(checkpoint: Checkpoint, sources: list[str], references: list[str], beam_size: int = 1,
             pruned: list[HeadSpec] | None = None, alpha: float = 0.6) -> dict:
    """sacreBLEU (13a, cased, detokenized) and chrF of the translations of sources against references."""
    started = time.perf_counter()
    # Blank source lines cannot be translated; they count as empty output, as sacreBLEU would score them.
    indices = [i for i, s in enumerate(sources) if s.strip()]
    translated = translate(checkpoint, [sources[i] for i in indices], beam_size, pruned, alpha)
    hypotheses = [""] * len(sources)
    for i, text in zip(indices, translated):
        hypotheses[i] = text
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
        "sentences": len(sources),
        "seconds": round(time.perf_counter() - started, 2),
    }
