"""Pronouns in the training captions whose antecedent a simple rule settles, and how often each head finds it: the
in-domain counterpart of the lecture's “it” (explorer/analyses/sentence/word_focus.py), shipped as
pronoun_examples.json in each bundled model's folder and offered on the Attention page under “Try a sentence”.

The rule (gender agreement): a sentence with “his”/“he”/“him” and exactly one singular male noun among MALE
(no plural one: “men”, “boys”…), or “her”/“she” and exactly one singular female noun among FEMALE, that noun
before the pronoun, the pronoun the sentence's first pronoun (the one the page picks), and at least one other
noun-like word (one the training captions put at least NOUN_COUNT times right after a determiner and right before a
preposition, a conjunction, an auxiliary, punctuation or the end: “a shirt .”, “the dog is”). The antecedent is that
noun. Measured as the page measures it: the pronoun's word-level weights (Clark et al. 2019) in the encoder's
self-attention; a head *resolves* the pronoun when its most-attended other content word (special tokens and
punctuation left out) is the antecedent.

Rerun (about 20–40 s a model on one CPU thread; writes models/en-de-h*/pronoun_examples.json):

    .venv/bin/python -m explorer.analyses.lecture.pronoun_examples                  # the three bundled models
    .venv/bin/python -m explorer.analyses.lecture.pronoun_examples models/en-de-h8  # one folder

Statistics are additive tallies per file (counts and sums per head), merged at the end.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import torch

import explorer.settings as settings
from explorer.analyses.sentence.word_focus import (
    LECTURE,
    PRONOUNS,
    WordAttention,
    candidates,
    default_word,
    find_word,
    focus,
    resolution,
    sentence_attention,
)
from explorer.capture.inputs import sentence_case
from explorer.models.data import read_lines
from explorer.models.interface import ExplorerModel
from explorer.models.tokenizer import clean_text

CORPUS = settings.MULTI30K
SPLITS = {"train": "train.en.gz", "val": "val.en.gz", "test_2016_flickr": "test_2016_flickr.en.gz"}
HELD_OUT = ("val", "test_2016_flickr")
EXAMPLES_FILE = "pronoun_examples.json"
BUNDLED = [settings.TRANSLATORS[heads] for heads in (8, 2, 1)]

MALE = {"man", "boy", "guy", "gentleman", "father", "son", "husband", "brother", "grandfather", "grandson", "dad",
        "king", "groom", "policeman", "fireman", "businessman", "grandpa", "uncle", "nephew", "boyfriend", "cowboy",
        "fisherman"}
FEMALE = {"woman", "girl", "lady", "mother", "daughter", "wife", "sister", "grandmother", "granddaughter", "mom",
          "queen", "bride", "policewoman", "businesswoman", "grandma", "aunt", "niece", "girlfriend", "cowgirl"}
MALE_PLURAL = {"men", "boys", "guys", "gentlemen", "fathers", "sons", "husbands", "brothers", "grandfathers",
               "grandsons", "dads", "kings", "grooms", "policemen", "firemen", "businessmen", "uncles", "nephews",
               "boyfriends", "cowboys", "fishermen"}
FEMALE_PLURAL = {"women", "girls", "ladies", "mothers", "daughters", "wives", "sisters", "grandmothers",
                 "granddaughters", "moms", "queens", "brides", "policewomen", "businesswomen", "aunts", "nieces",
                 "girlfriends", "cowgirls"}
GENDERS = {"male": (("his", "he", "him"), MALE, MALE_PLURAL), "female": (("her", "she"), FEMALE, FEMALE_PLURAL)}
DETERMINERS = {"a", "an", "the", "his", "her", "their", "its", "another", "some", "two", "three", "several", "one"}
STOPS = {"in", "on", "at", "with", "of", "for", "to", "from", "by", "into", "onto", "near", "while", "and", "or",
         "but", "is", "are", "was", "were", "who", "that", "as", "through", "under", "over", "behind", "next",
         "down", "up", "out", "across", "along", "around", "outside", "inside", "during", "after", "before", "has",
         "have", "holds", "looks", "sits", "stands"}
EXAMPLES = 5
MAX_EXAMPLE_WORDS = 16
NOUN_COUNT = 3              # times a word must stand as a noun in the training captions to count as one
PER_PRONOUN = 2             # examples of one pronoun at most


def corpus_words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def might_qualify(text: str) -> bool:
    """A cheap test on the text, before the model reads it: a pronoun and exactly one noun of its gender."""
    words = corpus_words(text)
    return any(any(p in words for p in pronouns) and sum(w in singular for w in words) == 1
               and not any(w in plural for w in words) for pronouns, singular, plural in GENDERS.values())


def noun_lexicon(sentences: list[str], least: int = NOUN_COUNT) -> frozenset[str]:
    """The corpus's noun-like words: seen at least `least` times right after a determiner and right before a
    stop word, punctuation or the end (“a shirt .”, “the dog is”): an adjective or a verb rarely stands there."""
    counts: dict[str, int] = {}
    for text in sentences:
        tokens = re.findall(r"[a-z]+|[^\sa-z]", text.lower())
        for index in range(1, len(tokens)):
            word, after = tokens[index], tokens[index + 1] if index + 1 < len(tokens) else "."
            if tokens[index - 1] in DETERMINERS and word.isalpha() and word not in STOPS | DETERMINERS and (
                    after in STOPS or not after.isalpha()):
                counts[word] = counts.get(word, 0) + 1
    return frozenset(word for word, count in counts.items() if count >= least)


def noun_like(words: list[str], content: np.ndarray, nouns: frozenset[str]) -> set[int]:
    """Indices of the sentence's noun-like content words (lower case words; nouns: noun_lexicon's)."""
    return {index for index, word in enumerate(words)
            if content[index] and word in nouns and word not in PRONOUNS}


def pronoun_and_antecedent(reading: WordAttention, nouns: frozenset[str]) -> tuple[int, int] | None:
    """(pronoun, antecedent) word indices when the rule settles them, else None."""
    words = [word.lower() for word in reading.words]
    pronoun = default_word(reading)
    if words[pronoun] not in PRONOUNS:
        return None
    for pronouns, singular, plural in GENDERS.values():
        if words[pronoun] not in pronouns:
            continue
        gendered = [index for index, word in enumerate(words) if reading.content[index] and word in singular]
        if len(gendered) != 1 or any(word in plural for word in words) or gendered[0] > pronoun:
            return None
        others = noun_like(words, reading.content, nouns) - {gendered[0], pronoun}
        return (pronoun, gendered[0]) if others else None
    return None


def measure(reading: WordAttention, pronoun: int, antecedent: int) -> dict:
    """One sentence: per head the weight on the antecedent and whether it is the head's top other word."""
    found = focus(reading, pronoun)
    return {"weight": reading.pattern[:, :, pronoun, antecedent].astype(np.float64),
            "top": found.target == antecedent, "focus": found,
            "chance": 1.0 / int(candidates(reading, pronoun).sum())}


def tally(model: ExplorerModel, sentences: list[str], split: str, nouns: frozenset[str]) -> dict:
    """Additive statistics of one file: per head the summed weight and top count, the chance sum, and every
    sentence where some head resolves its pronoun (a candidate example)."""
    shape = (model.layers("encoder"), model.heads)
    totals = {"read": len(sentences), "scanned": 0, "weight": np.zeros(shape), "top": np.zeros(shape),
              "chance": 0.0, "resolved": []}
    for raw in sentences:
        text = clean_text(raw)
        if not text or not might_qualify(text):
            continue
        reading = sentence_attention(model, text)
        settled = pronoun_and_antecedent(reading, nouns)
        if settled is None:
            continue
        pronoun, antecedent = settled
        measured = measure(reading, pronoun, antecedent)
        totals["scanned"] += 1
        totals["weight"] += measured["weight"]
        totals["top"] += measured["top"]
        totals["chance"] += measured["chance"]
        if measured["top"].any():
            weights = np.where(measured["top"], measured["weight"], -1.0)
            layer, head = np.unravel_index(int(weights.argmax()), weights.shape)
            between = noun_like([w.lower() for w in reading.words], reading.content, nouns) & set(
                range(antecedent + 1, pronoun))
            totals["resolved"].append({
                "sentence": text, "pronoun": reading.words[pronoun], "antecedent": reading.words[antecedent],
                "head": reading.head_name(int(layer), int(head)), "weight": round(float(weights[layer, head]), 4),
                "heads_resolving": int(measured["top"].sum()), "noun_between": bool(between), "split": split,
                "words": int(reading.content.sum())})
    return totals


def merged(tallies: list[dict]) -> dict:
    first, *rest = tallies
    result = {key: (value.copy() if isinstance(value, np.ndarray) else list(value) if isinstance(value, list)
                    else value) for key, value in first.items()}
    for other in rest:
        for key in ("read", "scanned", "weight", "top", "chance"):
            result[key] = result[key] + other[key]
        result["resolved"] += other["resolved"]
    return result


def figures(totals: dict, kind_short: str = "enc") -> dict:
    """Corpus-level figures: the best head (by how often it resolves the pronoun, then mean weight)."""
    scanned = max(totals["scanned"], 1)
    share, mean = totals["top"] / scanned, totals["weight"] / scanned
    layer, head = max(np.ndindex(share.shape), key=lambda lh: (share[lh], mean[lh]))
    return {"sentences_read": int(totals["read"]), "sentences_scanned": int(totals["scanned"]),
            "best_head": f"{kind_short}.{layer}.{head}", "best_head_mean_weight": round(float(mean[layer, head]), 4),
            "best_head_top_share": round(float(share[layer, head]), 4),
            "chance_top_share": round(totals["chance"] / scanned, 4),
            "any_head_resolves_share": round(len(totals["resolved"]) / scanned, 4)}


def chosen_examples(resolved: list[dict]) -> list[dict]:
    """A handful to offer: sentence case (the page recases nothing), short, at most PER_PRONOUN per pronoun;
    those with another noun between antecedent and pronoun first (the head skipped a nearer noun), then by weight."""
    fitting = [r for r in resolved if r["words"] <= MAX_EXAMPLE_WORDS and sentence_case(r["sentence"]) is None]
    fitting.sort(key=lambda r: (not r["noun_between"], -r["weight"]))
    chosen, per_pronoun, seen = [], {}, set()
    for r in fitting:
        pronoun = r["pronoun"].lower()
        if per_pronoun.get(pronoun, 0) >= PER_PRONOUN or r["sentence"] in seen:
            continue
        chosen.append({key: r[key] for key in ("sentence", "pronoun", "antecedent", "head", "weight", "split",
                                                "heads_resolving")})
        per_pronoun[pronoun] = per_pronoun.get(pronoun, 0) + 1
        seen.add(r["sentence"])
        if len(chosen) == EXAMPLES:
            break
    return chosen


def lecture_results(model: ExplorerModel) -> list[dict]:
    results = []
    for text, pronoun_text, antecedent_text in LECTURE:
        reading = sentence_attention(model, text)
        pronoun = find_word(reading, pronoun_text)
        antecedent = find_word(reading, antecedent_text, pronoun)
        found = focus(reading, pronoun)
        settled = resolution(reading, found, antecedent)
        results.append({"sentence": text, "pronoun": pronoun_text, "antecedent": antecedent_text,
                        "head": reading.head_name(*settled.best), "weight": round(settled.best_weight, 4),
                        "resolved_by": [reading.head_name(*lh) for lh in settled.resolving]})
    return results


def pronoun_examples(model: ExplorerModel, corpus: Path = CORPUS, splits: dict[str, str] = SPLITS) -> dict:
    """The JSON shipped in a model's folder (see the module's docstring)."""
    torch.set_num_threads(1)
    started = time.perf_counter()
    texts = {split: read_lines(corpus / name) for split, name in splits.items()}
    nouns = noun_lexicon(texts.get("train") or [line for lines in texts.values() for line in lines])
    tallies = {split: tally(model, lines, split, nouns) for split, lines in texts.items()}
    everything = merged(list(tallies.values()))
    held = [tallies[split] for split in HELD_OUT if split in tallies]
    rule = __doc__.split("\n\n")[1].replace("\n", " ").replace("NOUN_COUNT", str(NOUN_COUNT))
    result = {"definition": rule, "male_nouns": sorted(MALE), "female_nouns": sorted(FEMALE),
              "corpus": {split: str(Path("explorer/data/multi30k") / name) for split, name in splits.items()},
              **figures(everything),
              "held_out": figures(merged(held)) if held else None,
              "examples": chosen_examples(everything["resolved"]),
              "lecture": lecture_results(model),
              "seconds": round(time.perf_counter() - started, 1), "torch_threads": 1}
    return result


def shipped_examples(folder: Path) -> dict | None:
    """A model folder's pronoun_examples.json, or None (a user's own model, or an unreadable file)."""
    try:
        return json.loads((Path(folder) / EXAMPLES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def main(folders: list[str]) -> None:
    from explorer.models.loader import open_model

    for folder in folders or [str(path) for path in BUNDLED]:
        result = pronoun_examples(open_model(folder))
        (Path(folder) / EXAMPLES_FILE).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n",
                                                  encoding="utf-8")
        print(f"{folder}: {result['sentences_scanned']} of {result['sentences_read']} sentences; best head "
              f"{result['best_head']}: mean weight {result['best_head_mean_weight']:.3f}, top word in "
              f"{result['best_head_top_share']:.0%} (chance {result['chance_top_share']:.0%}); "
              f"{result['seconds']} s")


if __name__ == "__main__":
    main(sys.argv[1:])
