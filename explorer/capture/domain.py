"""How far a sentence is from what the model was trained on, from the training corpus's piece frequencies.

The score is the sentence's log-perplexity under the unigram distribution of the source side of the training
corpus (mean −log p(piece), add-one smoothed). It separates Multi30k test captions from UD English EWT web
text with ROC AUC 0.96, where the share of words with a rare piece manages 0.54–0.82 (`benchmarks/domain.py`;
subword pieces make most rare words out of frequent pieces). A sentence is out of domain when its score is
OUT_OF_DOMAIN_MARGIN nats above the corpus's own unigram entropy — about the 95th percentile of in-domain
captions — and the words named are those whose own pieces score WORD_MARGIN above that entropy.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from explorer.models.interface import ExplorerModel
from explorer.models.tokenizer import clean_text

RARE_COUNT = 5                  # the rare-piece word share, measured beside the score in the benchmark
OUT_OF_DOMAIN_MARGIN = 1.0
WORD_MARGIN = 2.0
# nats. On 300 Multi30k val captions each, German ones score 4.7 lower under the German side than under the English
# (all 300 past the margin), English ones 4.3 higher (none past it).
LANGUAGE_MARGIN = 1.0
WORD = re.compile(r"[^\W\d_][\w'’-]*")
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


@dataclass
class Familiarity:
    words: list[str]            # the sentence's words (letters; numbers and punctuation left out)
    unfamiliar: list[str]       # its rarest words by the training corpus, most unfamiliar first
    log_perplexity: float       # mean −log p(piece) under the training corpus's piece unigram distribution
    entropy: float              # the training corpus's own unigram entropy: what an average caption scores
    unfamiliar_share: float     # share of words with a piece seen fewer than RARE_COUNT times (for comparison)
    # The rarest of the text's sentences by the same score: a text of several sentences is as far from the
    # captions as its farthest one (a familiar caption around a strange sentence must not hide it).
    farthest_sentence: str = ""
    farthest_log_perplexity: float = 0.0
    # The same score under the training corpus's target side (German): lower by LANGUAGE_MARGIN nats means the text
    # is written in the language the model writes, not the one it reads (None: the model ships no target counts).
    target_log_perplexity: float | None = None

    @property
    def in_output_language(self) -> bool:
        return (self.target_log_perplexity is not None and bool(self.words)
                and self.target_log_perplexity <= self.log_perplexity - LANGUAGE_MARGIN)

    @property
    def out_of_domain(self) -> bool:
        score = max(self.log_perplexity, self.farthest_log_perplexity)
        return bool(self.words) and score >= self.entropy + OUT_OF_DOMAIN_MARGIN


def _piece_costs(counts: list[int]) -> tuple[list[float], float]:
    """−log p of every piece (add-one smoothed) and the corpus's unigram entropy."""
    total = sum(counts) + len(counts)
    costs = [-math.log((c + 1) / total) for c in counts]
    seen = sum(counts) or 1
    return costs, sum(c / seen * cost for c, cost in zip(counts, costs))


def familiarity(text: str, model: ExplorerModel) -> Familiarity | None:
    """None when the model ships no token frequencies (a user's own model): no notice, no error."""
    counts = (model.token_frequencies or {}).get("source")
    if not counts:
        return None
    costs, entropy = _piece_costs(counts)
    cleaned = clean_text(text)

    def piece_ids(part: str) -> list[int]:
        return [i for i in model.encode(part).ids if i not in model.special_ids]

    words = WORD.findall(cleaned)
    word_ids = {w: piece_ids(w) for w in dict.fromkeys(words)}
    word_cost = {w: sum(costs[i] for i in ids) / len(ids) for w, ids in word_ids.items() if ids}
    unfamiliar = sorted((w for w, cost in word_cost.items() if cost >= entropy + WORD_MARGIN), key=lambda w: -word_cost[w])
    rare = sum(min((counts[i] for i in word_ids[w]), default=0) < RARE_COUNT for w in words)
    def mean_cost(part: str) -> float:
        ids = piece_ids(part)
        return sum(costs[i] for i in ids) / len(ids) if ids else 0.0

    sentences = [part for part in SENTENCE_END.split(cleaned) if WORD.search(part)]
    farthest = max(sentences, key=mean_cost) if len(sentences) > 1 else ""
    target_counts = (model.token_frequencies or {}).get("target")
    target = None
    if target_counts and len(target_counts) == len(counts) and piece_ids(cleaned):
        target_costs, _ = _piece_costs(target_counts)
        ids = piece_ids(cleaned)
        target = sum(target_costs[i] for i in ids) / len(ids)
    return Familiarity(words, unfamiliar, mean_cost(cleaned), entropy, rare / len(words) if words else 0.0,
                       farthest, mean_cost(farthest) if farthest else 0.0, target)


def training_description(checkpoint: ExplorerModel) -> str:
    """What the model was trained on, from its config.json; "" when the checkpoint does not say."""
    data = checkpoint.info.get("data") or {}
    if checkpoint.info.get("summary"):        # a pretrained model installed as a package (models/installed.py)
        return checkpoint.info["summary"]
    if data.get("training_images"):
        accuracy = (checkpoint.info.get("scores") or {}).get("held_out_accuracy")
        right = f"; {accuracy:.1%} right on {data.get('held_out_images')} held-out ones" if accuracy else ""
        return f"Trained on {data['training_images']:,} handwritten digits of 8×8 pixels{right}."
    pairs = data.get("train_pairs")
    if not pairs:
        return ""
    if trained_on_captions(checkpoint):
        return (f"Trained on {pairs:,} Multi30k image captions (English→German): good at short descriptions of "
                "pictures — people, animals, places, what they are doing — and weak on anything else.")
    return f"Trained on {pairs:,} sentence pairs ({data.get('train')})."


def trained_on_captions(model) -> bool:
    """Whether the model was trained on the Multi30k captions (the bundled translators), as its checkpoint says."""
    return "multi30k" in str((model.info.get("data") or {}).get("train", "")).lower()
