"""Where one word looks: the lecture's question ("The animal didn't cross the street because it was too tired.":
which word does “it” attend to?) asked of every layer and head at once.

Over words, as Clark et al. 2019 aggregate pieces (explorer/capture/words.py: attention to a word is the sum over its
pieces, from a word the mean of its pieces' rows), in the self-attention of the stack that reads the sentence: the
encoder, or a decoder-only model's decoder over the prompt. For each head: the word's most-attended **other** word
(not itself; special tokens and punctuation are never named, since heads park weight on them, Clark et al.'s
“no-op”), with its weight; what the word keeps on itself and on special tokens / punctuation is kept beside it.

In a notebook:

    from explorer.capture.trace import trace_sentence
    from explorer.analyses.sentence.word_focus import word_attention, focus, answer_text, default_word
    reading = word_attention(model,
                             trace_sentence(model, "The animal didn't cross the street because it was too tired."))
    print(answer_text(reading, focus(reading, default_word(reading))))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from explorer.analyses.sentence.norms import punctuation
from explorer.capture.domain import trained_on_captions
from explorer.capture.head_sets import HeadSpec, head_mask, parse_heads
from explorer.capture.inputs import prepare_source
from explorer.capture.trace import Trace
from explorer.capture.words import to_words, words_of
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import Kind, attention_hook

PRONOUNS = ("it", "he", "she", "they", "his", "her", "its", "their", "him", "them")
PER_LAYER_UP_TO = 4     # layers: up to this many, the answer names the strongest heads of each layer; beyond, overall
NAMED_PER_LAYER = 2
NAMED_OVERALL = 3
# The question as lectures on "Attention Is All You Need" ask it (the Google AI blog's figure): the same sentence
# twice, its last word deciding what “it” is.
LECTURE = (("The animal didn't cross the street because it was too tired.", "it", "animal"),
           ("The animal didn't cross the street because it was too wide.", "it", "street"))


@dataclass(frozen=True)
class WordAttention:
    """One sentence's word-level self-attention in the stack that reads it."""
    kind: str                   # "encoder", or a decoder-only model's "decoder"
    words: list[str]            # labels as written (▁ word marks removed)
    content: np.ndarray         # [words] bool: a word that may be named (not a special token, not punctuation)
    pattern: np.ndarray         # [layers, heads, words, words] attention weights over words
    pruned: frozenset = frozenset()     # (layer, head) of this kind's masked heads

    @property
    def layers(self) -> int:
        return self.pattern.shape[0]

    @property
    def heads(self) -> int:
        return self.pattern.shape[1]

    def head_name(self, layer: int, head: int) -> str:
        return str(HeadSpec(self.kind, layer, head))


@dataclass(frozen=True)
class Focus:
    """Where one word looks, per head [layers, heads]."""
    word: int
    target: np.ndarray          # its most-attended other content word (-1 when the sentence has none)
    weight: np.ndarray          # the weight on it
    itself: np.ndarray          # the weight the word keeps on itself
    parked: np.ndarray          # the weight on special tokens and punctuation


def reading_kind(model: ExplorerModel) -> Kind:
    """The self-attention that reads the sentence: the encoder's, or a decoder-only model's decoder."""
    return Kind.ENCODER if model.has("encoder") else Kind.DECODER


def label(word: str) -> str:
    """A word's label as text: the word-start marks left out ("▁animal" → "animal")."""
    return word.lstrip("▁Ġ") or word


def _reading(model: ExplorerModel, ids: list[int], pieces_pattern: np.ndarray, kind: str,
             pruned: frozenset = frozenset()) -> WordAttention:
    words = words_of(model, ids)
    special = [any(ids[position] in model.special_ids for position in span) for span in words.spans]
    content = np.array([not is_special and not punctuation(word)
                        for word, is_special in zip(words.labels, special)], dtype=bool)
    return WordAttention(kind, [label(word) for word in words.labels], content,
                         to_words(pieces_pattern, words, words), pruned)


def word_attention(model: ExplorerModel, trace: Trace) -> WordAttention:
    """The sentence's word-level self-attention from a trace over pieces (a decoder-only model's: its prompt's
    rows and columns; the continuation is left out). A pruned head (trace.pruned) is marked, never named."""
    kind = reading_kind(model)
    if kind is Kind.ENCODER:
        ids, pattern = trace.source_ids, trace.pattern(kind)
    else:
        ids = trace.target_ids[: trace.first_step_position + 1]
        pattern = trace.pattern(kind)[:, :, : len(ids), : len(ids)]
    pruned = frozenset((spec.layer, spec.head) for spec in parse_heads(trace.pruned, model) if spec.kind == kind)
    return _reading(model, ids, pattern, kind, pruned)


@torch.no_grad()
def sentence_attention(model: ExplorerModel, text: str, pruned: Iterable[HeadSpec] = ()) -> WordAttention:
    """The same, for a sentence read alone (no decoding: the reading stack only; a decoder-only model's prompt),
    as a corpus scan wants it; `pruned` heads masked as in trace_sentence. The text is taken as it is (no
    recasing), so a sentence in sentence case gives the page's numbers."""
    ids, pruned = prepare_source(text, model).ids, list(pruned)
    kind = reading_kind(model)
    batch, names, gates = model.pad([ids]), [attention_hook(kind, "*", "pattern")], head_mask(pruned, model)
    _, cache = (model.run_with_cache(batch, None, names, head_mask=gates) if kind is Kind.ENCODER
                else model.run_with_cache(None, batch, names, head_mask=gates))
    masked = frozenset((spec.layer, spec.head) for spec in pruned if spec.kind == kind)
    return _reading(model, ids, cache.layers(kind, "pattern")[0].float().cpu().numpy(), kind, masked)


def candidates(reading: WordAttention, word: int) -> np.ndarray:
    """[words] bool: the words `word` may be said to look at."""
    others = reading.content.copy()
    others[word] = False
    return others


def focus(reading: WordAttention, word: int) -> Focus:
    """Each head's most-attended other content word for `word`, its weight, and the rest of the row's weight."""
    rows = reading.pattern[:, :, word, :].astype(np.float64)      # [layers, heads, words]
    allowed = candidates(reading, word)
    if allowed.any():
        target = np.where(allowed, rows, -np.inf).argmax(-1)
        weight = np.take_along_axis(rows, target[..., None], -1)[..., 0]
    else:
        target, weight = np.full(rows.shape[:2], -1), np.full(rows.shape[:2], np.nan)
    return Focus(word, target, weight, rows[..., word], rows[..., ~reading.content].sum(-1))


def default_word(reading: WordAttention) -> int:
    """The first pronoun of the sentence, else its middle content word (else its first word)."""
    content = [index for index, is_content in enumerate(reading.content) if is_content]
    for index in content:
        if reading.words[index].lower() in PRONOUNS:
            return index
    return content[len(content) // 2] if content else 0


def word_keys(reading: WordAttention) -> dict[str, int]:
    """A text key per content word, for a link (`word=it`; a repeated word `the~2`), → its index."""
    keys, seen = {}, {}
    for index, word in enumerate(reading.words):
        if reading.content[index]:
            seen[word] = seen.get(word, 0) + 1
            keys[word if seen[word] == 1 else f"{word}~{seen[word]}"] = index
    return keys


def percent(weight: float) -> str:
    return f"{round(100 * float(weight))}%"


def quoted(word: str) -> str:
    return f"“{word}”"


def strongest(reading: WordAttention, found: Focus) -> list[list[tuple[int, int]]]:
    """The heads the answer names, strongest first: per layer (up to PER_LAYER_UP_TO layers) its
    NAMED_PER_LAYER heads with the most weight on another word; beyond, the NAMED_OVERALL strongest overall, as
    one group. Pruned heads are never named."""
    heads = [(layer, head) for layer in range(reading.layers) for head in range(reading.heads)
             if (layer, head) not in reading.pruned and found.target[layer, head] >= 0]
    order = sorted(heads, key=lambda lh: (-found.weight[lh], lh))
    if reading.layers <= PER_LAYER_UP_TO:
        groups = [[lh for lh in order if lh[0] == layer][:NAMED_PER_LAYER] for layer in range(reading.layers)]
        return [group for group in groups if group]
    return [order[:NAMED_OVERALL]]


def answer_text(reading: WordAttention, found: Focus) -> str:
    """The answer in a sentence per layer: “In encoder layer 2, head 0 gives 35% to “animal”; head 2 gives 90%
    to “street”.” Its percentages are the weights, rounded."""
    word = quoted(reading.words[found.word])
    groups = strongest(reading, found)
    if not groups:
        return f"{word} has no other word to look at in this sentence."

    def gives(layer: int, head: int) -> str:
        return (f"head {head} gives {percent(found.weight[layer, head])} to "
                f"{quoted(reading.words[found.target[layer, head]])}")

    stack = reading.kind
    if reading.layers <= PER_LAYER_UP_TO:
        sentences = [f"In {stack} layer {group[0][0]}, " + "; ".join(gives(*lh) for lh in group) + "."
                     for group in groups]
    else:
        sentences = [f"Strongest {stack} heads: " + "; ".join(f"layer {layer}, {gives(layer, head)}"
                                                                for layer, head in groups[0]) + "."]
    return f"Where {word} looks most: " + " ".join(sentences)


@dataclass(frozen=True)
class Resolution:
    antecedent: int
    resolving: list[tuple[int, int]]        # heads whose most-attended other word is the antecedent, strongest first
    best: tuple[int, int]                   # the head with the most weight on the antecedent
    best_weight: float
    heads: int                              # heads considered (pruned ones left out)


def resolution(reading: WordAttention, found: Focus, antecedent: int) -> Resolution:
    """Whether any head resolves the pronoun: gives the antecedent the most weight among the other words."""
    heads = [(layer, head) for layer in range(reading.layers) for head in range(reading.heads)
             if (layer, head) not in reading.pruned]
    on = reading.pattern[:, :, found.word, antecedent]
    resolving = sorted((lh for lh in heads if found.target[lh] == antecedent), key=lambda lh: (-found.weight[lh], lh))
    best = max(heads, key=lambda lh: (on[lh], -lh[0], -lh[1])) if heads else (0, 0)
    return Resolution(antecedent, resolving, best, float(on[best]) if heads else float("nan"), len(heads))


def find_word(reading: WordAttention, text: str, before: int | None = None) -> int | None:
    """The index of a content word (case-insensitive), the last one before `before` when given, else the first."""
    found = [index for index, word in enumerate(reading.words)
             if reading.content[index] and word.lower() == text.lower() and (before is None or index < before)]
    return (found[-1] if before is not None else found[0]) if found else None


def resolution_text(reading: WordAttention, found: Focus, settled: Resolution) -> str:
    """What the heads make of a pronoun whose antecedent is known."""
    word, antecedent = quoted(reading.words[found.word]), quoted(reading.words[settled.antecedent])
    if settled.resolving:
        named = ", ".join(f"{reading.head_name(*lh)} ({percent(found.weight[lh])})" for lh in settled.resolving[:4])
        more = f" and {len(settled.resolving) - 4} more" if len(settled.resolving) > 4 else ""
        return (f"Here {word} means {antecedent}. {len(settled.resolving)} of {settled.heads} "
                f"heads {'resolves' if len(settled.resolving) == 1 else 'resolve'} it (give "
                f"{antecedent} the most weight among the other words): {named}{more}.")
    best_target = found.target[settled.best]
    instead = (f", whose most-attended word is {quoted(reading.words[best_target])}"
               if best_target >= 0 else "")
    return (f"Here {word} means {antecedent}. No head resolves it: none of the {settled.heads} heads gives "
            f"{antecedent} the most weight among the other words; the most any gives it is "
            f"{percent(settled.best_weight)} ({reading.head_name(*settled.best)}{instead}).")


def lecture_pair(model: ExplorerModel, pruned: Iterable[HeadSpec] = ()) -> tuple[str, list[str]]:
    """The lecture's two sentences differ in one word and “it” changes its antecedent with it: a head that follows
    the meaning changes its most-attended word too. (What that says, the heads that do.)"""
    pruned = list(pruned)
    readings = []
    for text, pronoun, antecedent in LECTURE:
        reading = sentence_attention(model, text, pruned)
        word = find_word(reading, pronoun)
        target = find_word(reading, antecedent, word) if word is not None else None
        if target is None:          # a tokenizer that does not keep these words whole: nothing to compare
            return "", []
        readings.append((reading, focus(reading, word), target))
    (first, found_a, a), (second, found_b, b) = readings
    heads = [(layer, head) for layer in range(first.layers) for head in range(first.heads)
             if (layer, head) not in first.pruned]
    following = [lh for lh in heads if found_a.target[lh] == a and found_b.target[lh] == b]
    ends = " and ".join(quoted(text.split()[-1].rstrip(".")) for text, _, _ in LECTURE)
    opening = (f"The lecture's two sentences differ in one word ({ends}), and that word changes what “it” means, from "
               f"{quoted(first.words[a])} to {quoted(second.words[b])}. A head that follows the meaning changes "
               "its most-attended word too: ")
    if following:
        named = ", ".join(f"{first.head_name(*lh)} ({percent(found_a.weight[lh])} → {percent(found_b.weight[lh])})"
                          for lh in following)
        return (opening + f"{len(following)} of {len(heads)} heads do on this model: {named}.",
                [first.head_name(*lh) for lh in following])
    same = [lh for lh in heads if found_a.target[lh] == found_b.target[lh] and found_a.target[lh] in (a, b)]
    example = ""
    if same:
        lh = max(same, key=lambda lh: found_a.weight[lh] + found_b.weight[lh])
        example = (f" ({first.head_name(*lh)} gives {quoted(first.words[found_a.target[lh]])} "
                   f"{percent(found_a.weight[lh])} in one and {percent(found_b.weight[lh])} in the other: it finds "
                   "that word whatever the sentence means)")
    return opening + f"none of the {len(heads)} heads does on this model{example}.", []


def lecture_strongest(model: ExplorerModel, text: str) -> tuple[str, float] | None:
    """On one of the lecture's sentences: the head that gives the antecedent the most weight from “it”, and that
    weight (None for another sentence, or a tokenizer that splits the words)."""
    known = {sentence: (pronoun, antecedent) for sentence, pronoun, antecedent in LECTURE}
    if text not in known:
        return None
    reading = sentence_attention(model, text)
    word = find_word(reading, known[text][0])
    target = find_word(reading, known[text][1], word) if word is not None else None
    if target is None:
        return None
    settled = resolution(reading, focus(reading, word), target)
    return reading.head_name(*settled.best), settled.best_weight


def lecture_answer(model: ExplorerModel, text: str, pronoun: str, antecedent: str) -> str:
    """What a model's heads make of a sentence's pronoun whose antecedent is known, and for the lecture's sentences
    what they make of the pair: the words another model is compared by ("" when its tokenizer splits the words)."""
    reading = sentence_attention(model, text)
    word = find_word(reading, pronoun)
    target = find_word(reading, antecedent, word) if word is not None else None
    if target is None:
        return ""
    lines = [resolution_text(reading, focus(reading, word), resolution(reading, focus(reading, word), target))]
    if text in {sentence for sentence, _, _ in LECTURE}:
        lines.append(lecture_pair(model)[0])
    return "\n\n".join(line for line in lines if line)


def why_unresolved(model: ExplorerModel) -> str:
    """Why a small caption model may not resolve a pronoun the way the lecture's figure shows."""
    if trained_on_captions(model):
        layers, pairs = model.layers(reading_kind(model)), model.info["data"].get("train_pairs")
        return (f"Why: this model is small (d_model {model.d_model}, {layers} layers) and was trained on {pairs:,} "
                "image captions (Multi30k), where sentences like this one barely occur: a caption describes a picture "
                "and rarely needs an “it” resolved. The lecture's figure comes from the paper's Transformer, trained "
                "on millions of sentence pairs (WMT). To look at a large model, pick all-MiniLM-L6-v2 in the sidebar "
                "(a real pretrained encoder, trained on over a billion sentence pairs), or open a local Hugging Face "
                "folder (e.g. a Marian translation model) under “Your own checkpoint folder…”. The captions under "
                "“Try a sentence” are the few where one of this model's heads does find the antecedent.")
    return ("Attention weights need not point at the antecedent even where a model gets the pronoun right: they are "
            "one step of its computation (the Faithfulness page asks, token by token, whether attention points where "
            "the output depends).")
