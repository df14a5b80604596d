"""A parallel corpus, tokenised once, and what a model (with some heads masked) scores on it: teacher-forced
loss and corpus BLEU. Shared by importance, pruning curves and the Prune page."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from explorer.inputs import prepare_source
from explorer.translation import bleu, usable_pairs
from models.checkpoint import Checkpoint
from models.data import make_training_batch, token_batches
from models.decoding import translate_ids
from models.hooks import model_run
from models.tokenizer import PAD


@dataclass
class ParallelCorpus:
    """A tokenised parallel corpus: pairs of piece ids (no EOS/BOS), plus the raw references for BLEU."""

    pairs: list[tuple[list[int], list[int]]]
    sources: list[list[int]]      # source ids with EOS, ready to translate
    references: list[str]

    @classmethod
    def build(cls, checkpoint: Checkpoint, sources: list[str], references: list[str]) -> "ParallelCorpus":
        tokenizer, max_len = checkpoint.tokenizer, checkpoint.model.config.max_len
        keep = usable_pairs(sources, references)
        source_ids = [prepare_source(sources[i], tokenizer, max_len).ids for i in keep]
        target_ids = [tokenizer.encode_ids(references[i])[: max_len - 2] for i in keep]
        pairs = [(s[:-1], t) for s, t in zip(source_ids, target_ids)]
        return cls(pairs, source_ids, [references[i] for i in keep])

    def batches(self, max_tokens: int = 4000):
        for indices in token_batches(self.pairs, max_tokens, seed=0):
            yield indices, make_training_batch(self.pairs, indices)


def corpus_loss(checkpoint: Checkpoint, corpus: ParallelCorpus, gates: dict | None = None) -> float:
    """Mean teacher-forced cross-entropy per target token (nats), with the given head gates."""
    total, tokens = corpus_loss_totals(checkpoint, corpus, gates)
    return total / max(1, tokens)


def corpus_loss_totals(checkpoint: Checkpoint, corpus: ParallelCorpus, gates: dict | None = None) -> tuple[float, int]:
    """(summed cross-entropy, target tokens): additive over parts of a corpus."""
    total, tokens = 0.0, 0
    with torch.no_grad(), model_run(head_mask=gates or {}):
        for _, (src, tgt_in, tgt_out) in corpus.batches():
            logits = checkpoint.model(src, tgt_in)
            total += F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt_out.view(-1), ignore_index=PAD,
                                     reduction="sum").item()
            tokens += int((tgt_out != PAD).sum())
    return total, tokens


def corpus_translations(checkpoint: Checkpoint, corpus: ParallelCorpus, gates: dict | None = None) -> list[str]:
    with model_run(head_mask=gates or {}):
        outputs = translate_ids(checkpoint.model, corpus.sources)
    return [checkpoint.tokenizer.decode(o) for o in outputs]


def corpus_bleu(checkpoint: Checkpoint, corpus: ParallelCorpus, gates: dict | None = None) -> float:
    return bleu(corpus_translations(checkpoint, corpus, gates), corpus.references)
