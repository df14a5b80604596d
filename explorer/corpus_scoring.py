"""What a model scores on a corpus with some heads masked, for every model the explorer opens: per-example
losses (differentiable with respect to the head gates, for gradient importance), the corpus loss, and a quality
measure — BLEU for translation models, perplexity for language models (GPT-2 on its text, BERT on masked
tokens). Importance, ablation and pruning curves are written once against this interface.

- OwnTranslation: the explorer's own checkpoints on a parallel corpus (explorer/parallel_corpus.py).
- HuggingFaceTranslation: Marian, BART, mBART on a parallel corpus; outputs from transformers' generate.
- HuggingFaceText: GPT-2 (next-token loss over each line) and BERT/RoBERTa (a fixed 15% of each line's tokens,
  chosen by a seeded generator per line, replaced by the mask token and predicted).
"""

from __future__ import annotations

import math
import random
from typing import Iterator

import torch
import torch.nn.functional as F

from explorer.open_model import is_hugging_face
from explorer.parallel_corpus import (ParallelCorpus, corpus_bleu, corpus_loss, corpus_loss_totals,
                                      corpus_translations)
from explorer.translation import bleu, usable_pairs
from models.hooks import model_run
from models.tokenizer import PAD, clean_text

IGNORED = -100                  # label of a position that is not scored (transformers' convention)
MASKED_SHARE = 0.15             # BERT's share of tokens to mask (Devlin et al. 2019)
BATCH_SENTENCES = 16


class Scorer:
    """A corpus and a model: losses and quality with the head gates of the call (model_run head masks)."""

    metric = "BLEU"             # the quality measure's name; also its key in reports ("bleu", "perplexity")
    higher_is_better = True

    def __init__(self, checkpoint) -> None:
        self.checkpoint = checkpoint
        self.config = checkpoint.model.config

    @property
    def metric_key(self) -> str:
        return self.metric.lower()

    def batches(self) -> Iterator[tuple[list[int], object]]:
        """(indices of the examples, a batch ready for sentence_losses)."""
        raise NotImplementedError

    def sentence_losses(self, batch, gates: dict | None = None) -> torch.Tensor:
        """Mean loss per scored token of each example of the batch [B], with these gates (grad flows to them)."""
        raise NotImplementedError

    def loss_totals(self, gates: dict | None = None) -> tuple[float, int]:
        """(summed loss, scored tokens): additive over shards of the corpus."""
        raise NotImplementedError

    def loss(self, gates: dict | None = None) -> float:
        total, tokens = self.loss_totals(gates)
        return total / max(1, tokens)

    def quality(self, gates: dict | None = None) -> float:
        raise NotImplementedError

    def statistics(self, gates: dict | None = None, with_quality: bool = True) -> dict:
        """What this corpus contributes to the loss and quality of a bigger one: sums and counts only, never
        ratios (corpus BLEU is not the mean of shards' BLEU). scores_from() turns summed statistics into scores."""
        total, tokens = self.loss_totals(gates)
        stats = {"loss_sum": total, "tokens": tokens, "examples": self.size}
        if with_quality and self.metric == "BLEU":
            stats["bleu"] = bleu_statistics(self.translations(gates), self.references)
        return stats

    def translations(self, gates: dict | None = None) -> list[str]:
        raise NotImplementedError(f"{self.metric} is not measured on translations")

    @property
    def size(self) -> int:
        raise NotImplementedError


class OwnTranslation(Scorer):
    def __init__(self, checkpoint, sources: list[str], references: list[str]) -> None:
        super().__init__(checkpoint)
        self.corpus = ParallelCorpus.build(checkpoint, sources, references)

    @property
    def size(self) -> int:
        return len(self.corpus.pairs)

    def batches(self):
        return self.corpus.batches()

    def sentence_losses(self, batch, gates=None):
        src, tgt_in, tgt_out = batch
        with model_run(head_mask=gates or {}):
            logits = self.checkpoint.model(src, tgt_in)
        token_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD,
                                     reduction="none").view(tgt_out.shape)
        return token_loss.sum(1) / (tgt_out != PAD).sum(1).clamp_min(1)

    def loss(self, gates=None):
        return corpus_loss(self.checkpoint, self.corpus, gates)

    def loss_totals(self, gates=None):
        return corpus_loss_totals(self.checkpoint, self.corpus, gates)

    @property
    def references(self) -> list[str]:
        return self.corpus.references

    def translations(self, gates=None):
        return corpus_translations(self.checkpoint, self.corpus, gates)

    def quality(self, gates=None):
        return corpus_bleu(self.checkpoint, self.corpus, gates)


def pad_rows(rows: list[list[int]], value: int) -> torch.Tensor:
    """Id lists of different lengths as one [rows, longest] tensor, filled with value."""
    width = max(len(row) for row in rows)
    return torch.tensor([row + [value] * (width - len(row)) for row in rows])


def presence_mask(rows: list[list[int]]) -> torch.Tensor:
    """1 where a padded batch of these rows holds a real token, 0 on padding: the attention_mask models take."""
    return pad_rows([[1] * len(row) for row in rows], 0)


def pad_id(checkpoint) -> int:
    """The id a Hugging Face model's batches are padded with: its pad token, or its end token (GPT-2 has no pad
    token; the padded positions are masked out anyway)."""
    pad = checkpoint.tokenizer.pad_token_id
    return checkpoint.model.model.config.eos_token_id if pad is None else pad


def _length_batches(lengths: list[int]) -> Iterator[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for start in range(0, len(order), BATCH_SENTENCES):
        yield order[start: start + BATCH_SENTENCES]


class _HuggingFaceScorer(Scorer):
    """Shared by the Hugging Face scorers: per-example losses from logits and labels (IGNORED = not scored)."""

    def __init__(self, checkpoint) -> None:
        super().__init__(checkpoint)
        from explorer.hugging_face_trace import positions_limit

        self.loaded, self.tokenizer = checkpoint.model, checkpoint.tokenizer
        self.limit = positions_limit(self.loaded)
        self.pad = pad_id(checkpoint)

    def token_losses(self, batch: dict, gates) -> tuple[torch.Tensor, torch.Tensor]:
        """([B, T] loss of every token, [B, T] True where scored)."""
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        with model_run(head_mask=gates or {}):
            logits = self.loaded.model(**inputs).logits.float()
        labels = batch["labels"]
        losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORED,
                                 reduction="none").view(labels.shape)
        return losses, labels != IGNORED

    def sentence_losses(self, batch, gates=None):
        losses, scored = self.token_losses(batch, gates)
        return losses.sum(1) / scored.sum(1).clamp_min(1)

    def loss_totals(self, gates=None):
        total, tokens = 0.0, 0
        with torch.no_grad():
            for _, batch in self.batches():
                losses, scored = self.token_losses(batch, gates)
                total += float(losses.sum())
                tokens += int(scored.sum())
        return total, tokens


class HuggingFaceTranslation(_HuggingFaceScorer):
    def __init__(self, checkpoint, sources: list[str], references: list[str]) -> None:
        super().__init__(checkpoint)
        keep = usable_pairs(sources, references)
        self.sources = [self.tokenizer(clean_text(sources[i]), truncation=True, max_length=self.limit).input_ids
                        for i in keep]
        self.targets = [self.tokenizer(text_target=clean_text(references[i]), truncation=True,
                                       max_length=self.limit - 1).input_ids for i in keep]
        self.references = [references[i] for i in keep]
        self.start = self.loaded.model.config.decoder_start_token_id

    @property
    def size(self) -> int:
        return len(self.sources)

    def batches(self):
        for indices in _length_batches([len(s) + len(t) for s, t in zip(self.sources, self.targets)]):
            sources = [self.sources[i] for i in indices]
            targets = [self.targets[i] for i in indices]
            yield indices, {"input_ids": pad_rows(sources, self.pad),
                            "attention_mask": presence_mask(sources),
                            "decoder_input_ids": pad_rows([[self.start] + t[:-1] for t in targets], self.pad),
                            "labels": pad_rows(targets, IGNORED)}

    def translations(self, gates=None) -> list[str]:
        from explorer.hugging_face_trace import source_step_limit

        outputs = [""] * len(self.sources)
        with torch.no_grad(), model_run(head_mask=gates or {}):
            for indices in _length_batches([len(s) for s in self.sources]):
                sources = [self.sources[i] for i in indices]
                generated = self.loaded.model.generate(
                    input_ids=pad_rows(sources, self.pad), attention_mask=presence_mask(sources),
                    num_beams=1, do_sample=False, max_new_tokens=source_step_limit(self.loaded, max(map(len, sources))))
                for i, row in zip(indices, generated.tolist()):
                    outputs[i] = self.tokenizer.decode(row, skip_special_tokens=True)
        return outputs

    def quality(self, gates=None):
        return bleu(self.translations(gates), self.references)


class HuggingFaceText(_HuggingFaceScorer):
    metric = "perplexity"
    higher_is_better = False

    def __init__(self, checkpoint, lines: list[str]) -> None:
        super().__init__(checkpoint)
        self.masked = "decoder" not in self.loaded.kinds           # BERT-like: predict masked tokens
        texts = [t for t in (clean_text(line) for line in lines) if t]
        ids = [self.tokenizer(t, truncation=True, max_length=self.limit).input_ids for t in texts]
        self.examples = [row for row in ids if len(row) >= 2]
        if self.masked and self.tokenizer.mask_token_id is None:
            raise ValueError(f"{checkpoint.name}: has no mask token to score masked-token predictions with")

    @property
    def size(self) -> int:
        return len(self.examples)

    def masked_positions(self, index: int) -> list[int]:
        """The positions of example `index` that BERT predicts: a fixed 15% of its real tokens (at least one)."""
        special = set(self.tokenizer.all_special_ids)
        candidates = [i for i, token in enumerate(self.examples[index]) if token not in special]
        if not candidates:
            return []
        count = max(1, round(MASKED_SHARE * len(candidates)))
        return sorted(random.Random(index).sample(candidates, count))

    def batches(self):
        for indices in _length_batches([len(row) for row in self.examples]):
            rows = [self.examples[i] for i in indices]
            attention = presence_mask(rows)
            if self.masked:
                inputs, labels = [], []
                for i, row in zip(indices, rows):
                    positions = set(self.masked_positions(i))
                    inputs.append([self.tokenizer.mask_token_id if p in positions else t for p, t in enumerate(row)])
                    labels.append([t if p in positions else IGNORED for p, t in enumerate(row)])
                yield indices, {"input_ids": pad_rows(inputs, self.pad), "attention_mask": attention,
                                "labels": pad_rows(labels, IGNORED)}
            else:   # next-token prediction: position i is scored on token i + 1
                labels = pad_rows([row[1:] for row in rows], IGNORED)
                yield indices, {"input_ids": pad_rows(rows, self.pad), "attention_mask": attention,
                                "labels": torch.cat([labels, torch.full((len(rows), 1), IGNORED)], 1)}

    def quality(self, gates=None):
        return math.exp(min(self.loss(gates), 50.0))


def bleu_statistics(hypotheses: list[str], references: list[str]) -> list[int]:
    """sacreBLEU's sufficient statistics of a set of translations (n-gram matches and totals, lengths), summed."""
    from sacrebleu.metrics import BLEU

    per_sentence = BLEU()._extract_corpus_statistics(hypotheses, [references]) if hypotheses else []
    return [int(sum(column)) for column in zip(*per_sentence)] if per_sentence else [0] * 10


def chrf_statistics(hypotheses: list[str], references: list[str]) -> list[int]:
    """sacreBLEU's chrF statistics of a set of translations (character and word n-gram counts), summed."""
    from sacrebleu.metrics import CHRF

    per_sentence = CHRF()._extract_corpus_statistics(hypotheses, [references]) if hypotheses else []
    return [int(sum(column)) for column in zip(*per_sentence)] if per_sentence else []


def bleu_and_chrf(bleu_stats: list[int], chrf_stats: list[int]) -> tuple[float, float]:
    """Corpus BLEU and chrF from summed statistics (what sacrebleu.corpus_bleu / corpus_chrf compute)."""
    from sacrebleu.metrics import BLEU, CHRF

    chrf = CHRF()._compute_score_from_stats(chrf_stats).score if chrf_stats else 0.0
    return BLEU()._compute_score_from_stats(bleu_stats).score, chrf


def scores_from(stats: dict, metric: str) -> tuple[float, float | None]:
    """(loss, quality) of summed statistics: BLEU from sacreBLEU's statistics, perplexity = exp(loss)."""
    from sacrebleu.metrics import BLEU

    loss = stats["loss_sum"] / max(1, stats["tokens"])
    if metric == "BLEU":
        return loss, (BLEU()._compute_score_from_stats(stats["bleu"]).score if "bleu" in stats else None)
    return loss, math.exp(min(loss, 50.0))


def add_statistics(parts: list[dict]) -> dict:
    """Statistics of shards summed into those of their union."""
    total = {"loss_sum": sum(p["loss_sum"] for p in parts), "tokens": sum(p["tokens"] for p in parts),
             "examples": sum(p["examples"] for p in parts)}
    if parts and all("bleu" in p for p in parts):
        total["bleu"] = [sum(column) for column in zip(*(p["bleu"] for p in parts))]
    return total


def scorer_for(checkpoint, sources: list[str], references: list[str] | None = None) -> Scorer:
    """The scorer of a model on a corpus: pairs (sources, references) for translation models, plain lines
    (sources) for GPT-2 and BERT."""
    if not is_hugging_face(checkpoint):
        return OwnTranslation(checkpoint, sources, references or [])
    if "cross" in checkpoint.model.kinds:
        if references is None:
            raise ValueError(f"{checkpoint.name} translates: it is scored on sentence pairs (sources and references)")
        return HuggingFaceTranslation(checkpoint, sources, references)
    return HuggingFaceText(checkpoint, sources)
