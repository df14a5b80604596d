"""What a model scores on a corpus with some heads masked, for every model the explorer opens: per-example
losses (differentiable with respect to the head gates, for gradient importance), the corpus loss, and a quality
measure. One scorer per output capability (registered with @scores_output), written once on the model interface;
importance, ablation and pruning curves are written once against the Scorer, and the pages and the command line ask
the registry (corpus_task) what a corpus is for a model: sentence pairs or lines, BLEU or perplexity. A report
read back names its metric; scorer_by_metric gives that metric's Scorer (its words, its direction, its scores).

- TranslationScorer: sentence pairs; teacher-forced loss of the references, BLEU of the model's translations.
- ContinuationScorer: plain lines; next-token loss over each line, perplexity.
- MaskedScorer: plain lines; a fixed 15% of each line's tokens (chosen by a generator seeded by the line) replaced by
  the mask token and predicted; perplexity over them.
- EmbeddingScorer: plain lines; a sentence encoder's embeddings with the heads masked against the whole model's:
  1 − their cosine, and their mean cosine.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from sacrebleu.metrics import BLEU

from explorer.capture.forcing import IGNORED, forced_batch
from explorer.capture.inputs import InputError, prepare_source
from explorer.capture.translation import bleu, bleu_statistics, usable_pairs
from explorer.models.hooks import model_run
from explorer.models.interface import Batch, Continues, Embeds, ExplorerModel, FillsMask, Translates
from explorer.models.tokenizer import clean_text

MASKED_SHARE = 0.15             # BERT's share of tokens to mask (Devlin et al. 2019)
BATCH_TOKENS = 4000             # padded tokens per loss batch
LOSS_CAP = 50.0                 # perplexity of a mean loss above this is e^50: a number, never an overflow


def perplexity(loss: float) -> float:
    """exp(mean loss per token): the one formula every perplexity in the project comes from."""
    return math.exp(min(loss, LOSS_CAP))


class Scorer:
    """A corpus and a model: losses and quality with the head gates of the call (model_run head masks).
    Examples are (source ids, labelled ids) pairs made by the task's scorer; batches() pads them."""

    metric = "perplexity"       # the quality measure's name, as people read it ("BLEU", "perplexity")
    metric_key = "perplexity"   # its key in reports and statistics ("bleu_change" …)
    metric_title = "Perplexity" # its name at the start of a label
    metric_note = "lower is better"     # said after the metric's name in a pruning curve's title
    higher_is_better = False
    needs_references = False    # scored on sentence pairs (a source and its reference) rather than plain lines
    example_noun = "lines"      # what its corpus's examples are called
    example_word = "line"       # one example, in a word: "200 lines", "1 pair"
    loss_name = ""              # the loss it is scored by, in words

    def __init__(self, model: ExplorerModel) -> None:
        self.model = model
        self.examples: list[tuple[list[int], list[int]]] = []

    @classmethod
    def scores_from_statistics(cls, stats: dict) -> tuple[float, float | None]:
        """(loss, quality) of summed statistics (statistics(), add_statistics()): perplexity = exp(loss)."""
        loss = mean_loss(stats)
        return loss, perplexity(loss)

    @property
    def size(self) -> int:
        return len(self.examples)

    def batch(self, indices: list[int]) -> tuple[Batch | None, Batch | None, torch.Tensor]:
        """(source batch, target batch, labels) of some examples: IGNORED where a position is not scored."""
        return forced_batch(self.model, [self.examples[i] for i in indices])

    def batches(self) -> Iterator[tuple[list[int], tuple]]:
        """(indices of the examples, a batch ready for sentence_losses), similar lengths together."""
        lengths = [len(source) + len(output) for source, output in self.examples]
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        chunk: list[int] = []
        for i in order:
            if chunk and (len(chunk) + 1) * lengths[i] > BATCH_TOKENS:
                yield chunk, self.batch(chunk)
                chunk = []
            chunk.append(i)
        if chunk:
            yield chunk, self.batch(chunk)

    def token_losses(self, batch, gates) -> tuple[torch.Tensor, torch.Tensor]:
        """([B, T] loss of every position, [B, T] True where scored)."""
        source, target, labels = batch
        with model_run(head_mask=gates or {}):
            logits = self.model.forward(source, target).float()
        losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORED,
                                 reduction="none").view(labels.shape)
        return losses, labels != IGNORED

    def sentence_losses(self, batch, gates: dict | None = None) -> torch.Tensor:
        """Mean loss per scored token of each example of the batch [B], with these gates (grad flows to them)."""
        losses, scored = self.token_losses(batch, gates)
        return losses.sum(1) / scored.sum(1).clamp_min(1)

    def loss_totals(self, gates: dict | None = None) -> tuple[float, int]:
        """(summed loss, scored tokens): additive over shards of the corpus."""
        total, tokens = 0.0, 0
        with torch.no_grad():
            for _, batch in self.batches():
                losses, scored = self.token_losses(batch, gates)
                total += float(losses.sum())
                tokens += int(scored.sum())
        return total, tokens

    def loss(self, gates: dict | None = None) -> float:
        total, tokens = self.loss_totals(gates)
        return total / max(1, tokens)

    def quality(self, gates: dict | None = None) -> float:
        return perplexity(self.loss(gates))

    def statistics(self, gates: dict | None = None, with_quality: bool = True) -> dict:
        """What this corpus contributes to the loss and quality of a bigger one: sums and counts only, never
        ratios (corpus BLEU is not the mean of shards' BLEU). scores_from_statistics() turns summed statistics into
        scores."""
        total, tokens = self.loss_totals(gates)
        return {"loss_sum": total, "tokens": tokens, "examples": self.size}

    def translations(self, gates: dict | None = None) -> list[str]:
        raise NotImplementedError(f"{self.metric} is not measured on translations")


# The output capability → the Scorer of its corpora, in the order asked: a new capability registers its own.
SCORERS: dict[type, type[Scorer]] = {}


def scores_output(capability: type):
    """Register a Scorer class as the one for models that claim `capability`."""
    def register(scorer: type[Scorer]) -> type[Scorer]:
        SCORERS[capability] = scorer
        return scorer
    return register


@scores_output(Translates)
class TranslationScorer(Scorer):
    metric = metric_title = "BLEU"
    metric_key = "bleu"
    metric_note = "greedy"
    higher_is_better = True
    needs_references = True
    example_noun = "sentence pairs"
    example_word = "pair"
    loss_name = "teacher-forced loss of the references"

    def __init__(self, model: ExplorerModel, sources: list[str], references: list[str]) -> None:
        super().__init__(model)
        keep = usable_pairs(sources, references)
        self.sources = [prepare_source(sources[i], model).ids for i in keep]
        self.examples = [(source, model.encode_reference(references[i])) for source, i in zip(self.sources, keep)]
        self.references = [references[i] for i in keep]

    def translations(self, gates=None) -> list[str]:
        with torch.no_grad(), model_run(head_mask=gates or {}):
            outputs = self.model.generate(self.sources)
        return [self.model.detokenize(output) for output in outputs]

    def quality(self, gates=None):
        return bleu(self.translations(gates), self.references)

    def statistics(self, gates=None, with_quality=True):
        """The loss's sums and, with quality, sacreBLEU's statistics of the translations (summed over shards)."""
        stats = super().statistics(gates, with_quality)
        if with_quality:
            stats["bleu"] = bleu_statistics(self.translations(gates), self.references)
        return stats

    @classmethod
    def scores_from_statistics(cls, stats):
        """(loss, corpus BLEU from the summed sacreBLEU statistics; None where they were not gathered)."""
        loss = mean_loss(stats)
        return loss, (BLEU()._compute_score_from_stats(stats["bleu"]).score if "bleu" in stats else None)


def _lines(model: ExplorerModel, lines: list[str]) -> list[list[int]]:
    texts = [t for t in (clean_text(line) for line in lines) if t]
    return [ids for ids in (model.encode(t).ids for t in texts) if len(ids) >= 2]


@scores_output(Continues)
class ContinuationScorer(Scorer):
    """Next-token prediction over each line: the line's first token is the prompt, the rest is predicted."""
    loss_name = "next-token loss"

    def __init__(self, model: ExplorerModel, lines: list[str]) -> None:
        super().__init__(model)
        self.examples = [(ids[:1], ids[1:]) for ids in _lines(model, lines)]


@scores_output(FillsMask)
class MaskedScorer(Scorer):
    """A fixed 15% of each line's pieces masked and predicted."""
    loss_name = "masked-token loss"

    def __init__(self, model: ExplorerModel, lines: list[str]) -> None:
        super().__init__(model)
        if model.mask_id is None:
            raise InputError(f"{model.name}: has no mask token to score masked-token predictions with")
        self.examples = [(ids, ids) for ids in _lines(model, lines)]

    def masked_positions(self, index: int) -> list[int]:
        """The positions of example `index` that are predicted: a fixed 15% of its real tokens (at least one)."""
        ids = self.examples[index][0]
        candidates = [i for i, token in enumerate(ids) if token not in self.model.special_ids]
        if not candidates:
            return []
        count = max(1, round(MASKED_SHARE * len(candidates)))
        # Seeded by the line's own ids, not its place: a shard on a Ray worker masks what one process masks.
        return sorted(random.Random(zlib.crc32(str(ids).encode())).sample(candidates, count))

    def batch(self, indices):
        inputs, labels = [], []
        for i in indices:
            ids, positions = self.examples[i][0], set(self.masked_positions(i))
            inputs.append([self.model.mask_id if p in positions else t for p, t in enumerate(ids)])
            labels.append([t if p in positions else IGNORED for p, t in enumerate(ids)])
        return self.model.pad(inputs), None, Batch.of(labels, IGNORED).ids


@scores_output(Embeds)
class EmbeddingScorer(Scorer):
    """A sentence encoder's embeddings of plain lines with some heads masked, against the whole model's.

    Loss: 1 − the cosine between a line's embedding with the heads masked and the whole model's (0: nothing
    changed); quality: the mean cosine. Michel et al.'s importance is |∂L/∂ξ_h| at the whole model, where this
    loss is at its minimum and has no gradient; what matters there is how fast the embedding moves, the Jacobian
    J_h = ∂e/∂ξ_h. sentence_losses (what importance differentiates) is therefore u·e for a random direction u
    drawn per line (seeded by the line), scaled so that E|u·J_h| = ‖J_h‖ (u ~ N(0, π/2·I)): the mean over lines of
    |∂(u·e)/∂ξ_h| estimates E‖∂e/∂ξ_h‖, the first-order size of the change of the embedding when head h goes."""
    metric = "cosine to the whole model"
    metric_key = "cosine"
    metric_title = "Cosine to the whole model"
    metric_note = "1 = unchanged"
    higher_is_better = True
    loss_name = "1 − cosine to the whole model's embedding"

    def __init__(self, model: ExplorerModel, lines: list[str]) -> None:
        super().__init__(model)
        self.examples = [(ids, []) for ids in _lines(model, lines)]
        self._whole: dict[tuple[int, ...], torch.Tensor] = {}

    def batch(self, indices):
        return self.model.pad([self.examples[i][0] for i in indices]), None, torch.tensor(indices)

    def embeddings(self, batch, gates) -> tuple[torch.Tensor, torch.Tensor]:
        """([B, d] embeddings with these gates, [B, d] the whole model's, computed once per batch)."""
        source, _, indices = batch
        key = tuple(indices.tolist())
        if key not in self._whole:
            with torch.no_grad(), model_run(head_mask={}):
                self._whole[key] = self.model.embed(source).float()
        with model_run(head_mask=gates or {}):
            return self.model.embed(source).float(), self._whole[key]

    def token_losses(self, batch, gates):
        """([B, 1] 1 − cosine to the whole model, [B, 1] all scored): one scored "token" per line."""
        masked, whole = self.embeddings(batch, gates)
        losses = 1 - F.cosine_similarity(masked, whole, dim=-1)
        return losses[:, None], torch.ones_like(losses[:, None], dtype=torch.bool)

    def sentence_losses(self, batch, gates=None):
        """u·e per line, u a fixed random direction of the line's own (see the class): its gradient's size is the
        embedding's."""
        masked, _ = self.embeddings(batch, gates)
        directions = torch.stack([self.direction(int(i), masked.shape[-1]) for i in batch[2]])
        return (directions * masked).sum(-1)

    def direction(self, index: int, size: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(zlib.crc32(str(self.examples[index][0]).encode()))
        return torch.randn(size, generator=generator) * math.sqrt(math.pi / 2)

    def quality(self, gates=None) -> float:
        return 1 - self.loss(gates)

    @classmethod
    def scores_from_statistics(cls, stats):
        loss = mean_loss(stats)
        return loss, 1 - loss


def mean_loss(stats: dict) -> float:
    """The mean loss per scored token of summed statistics."""
    return stats["loss_sum"] / max(1, stats["tokens"])


def scores_from(stats: dict, metric: str) -> tuple[float, float | None]:
    """(loss, quality) of summed statistics, as the Scorer of `metric` makes them (scores_from_statistics)."""
    return scorer_by_metric(metric).scores_from_statistics(stats)


def add_statistics(parts: list[dict]) -> dict:
    """Statistics of shards summed into those of their union."""
    total = {"loss_sum": sum(p["loss_sum"] for p in parts), "tokens": sum(p["tokens"] for p in parts),
             "examples": sum(p["examples"] for p in parts)}
    if parts and all("bleu" in p for p in parts):
        total["bleu"] = [sum(column) for column in zip(*(p["bleu"] for p in parts))]
    return total


def scorer_of(model) -> type[Scorer] | None:
    """The Scorer class of the first registered capability the model claims; None when it claims none."""
    return next((scorer for capability, scorer in SCORERS.items() if isinstance(model, capability)), None)


def corpus_task(model) -> type[Scorer]:
    """What a corpus is for this model, as the class of its Scorer (its metric, whether it needs references, what
    an example is called, the loss): the first registered capability the model claims."""
    scorer = scorer_of(model)
    if scorer is not None:
        return scorer
    raise InputError(f"{model.name}: is not scored on a corpus (its output is none of "
                     f"{', '.join(capability.__name__ for capability in SCORERS)})")


def scorer_by_metric(name: str) -> type[Scorer]:
    """The Scorer class of a metric a report names ("BLEU", "perplexity", or its key "bleu"): what its examples are
    called, whether higher is better, how its statistics become scores. The first registered one where several
    share a metric (perplexity: continuation and masked-token)."""
    for scorer in SCORERS.values():
        if name in (scorer.metric, scorer.metric_key):
            return scorer
    raise InputError(f"{name!r} is not a metric the explorer scores with (it knows "
                     f"{', '.join(dict.fromkeys(scorer.metric for scorer in SCORERS.values()))})")


def scorer_for(model: ExplorerModel, sources: list[str], references: list[str] | None = None) -> Scorer:
    """The scorer of the model's output on a corpus: sentence pairs (sources, references) for a translation model,
    plain lines (sources) for a language model."""
    scorer = corpus_task(model)
    if not scorer.needs_references:
        return scorer(model, sources)
    if references is None:
        raise InputError(f"{model.name} is scored on {scorer.example_noun}: give sources and their references")
    return scorer(model, sources, references)
