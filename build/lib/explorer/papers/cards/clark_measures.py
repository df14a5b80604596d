"""Clark et al. 2019 ("What Does BERT Look At?") measured as the paper does, for the clark card (heads_papers.py).

Two measurements, each on the encoder's attention patterns (one forward pass a batch, no decoding):

- Figure 2: per layer, the mean over heads, sentences and every query of the share of attention on the first
  token ([CLS] in BERT), on the end-of-sentence token ([SEP], </s>: a special token after the first position) and
  on periods and commas. Clark et al.'s General_Analysis notebook averages the same way (each query's weights on
  the chosen keys, summed, then the mean over queries).
- Table 1: per dependency relation the best head's word-level accuracy, in either direction (the dependent's
  most-attended other word is its head, or the head is the word that attends most to the dependent), against the
  best fixed-offset baseline (always guessing the head at one offset from the dependent, the best of −3 … +2 as
  their notebook tries). As in the paper, a word's attention to itself is left out of the argmax, and so are the
  special tokens (their code: attn[1:-1, 1:-1] drops [CLS] and [SEP]). The sentence is tokenized once, as written.

The relations are Universal Dependencies (UD EWT), with their subtypes kept (nmod:poss, aux:pass, compound:prt):
Clark et al. used Stanford Dependencies on the WSJ, so PAPER_TABLE names each paper relation's UD counterpart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.capture.treebank import Tree, word_attention
from explorer.models.hooks import capture
from explorer.models.interface import ExplorerModel
from explorer.models.vocabulary import attention_hook

PUNCTUATION = {".", ","}                # Clark et al.'s "[. or ,]"
OFFSETS = range(-3, 3)                   # the baseline's offsets, as their notebook (offset_predictor(i), −3 … 2)
DIRECTIONS = ("dependent→head", "head→dependent")
BATCH = 32


@dataclass(frozen=True)
class PaperRow:
    """One row of Clark et al.'s Table 1 (BERT-base on WSJ, Stanford Dependencies) and its UD counterpart."""
    paper: str          # the Stanford Dependencies relation
    ud: str | None      # the UD EWT relation with the same two words, None where UD has no such arc
    head: str           # the paper's best head, layer-head counted from 1
    accuracy: float
    baseline: float
    note: str = ""


# The values of the cell of Clark et al.'s released notebook (github.com/clarkkev/attention-analysis,
# Syntax_Analysis.ipynb) that "produces the scores in Table 1", its 0-based layer-head written from 1 as the paper
# does: e.g. det 7-10 there is the paper's head 8-11.
PAPER_TABLE = (
    PaperRow("det", "det", "8-11", 0.943, 0.517),
    PaperRow("dobj", "obj", "8-10", 0.868, 0.400),
    PaperRow("nsubj", "nsubj", "8-2", 0.585, 0.455),
    PaperRow("amod", "amod", "4-10", 0.756, 0.683),
    PaperRow("pobj", "case", "9-6", 0.763, 0.346,
             "the same two words; UD makes the preposition depend on its noun, the reverse of SD's pobj"),
    PaperRow("poss", "nmod:poss", "7-6", 0.805, 0.477),
    PaperRow("nn", "compound", "4-10", 0.704, 0.702),
    PaperRow("aux", "aux", "4-10", 0.811, 0.715),
    PaperRow("auxpass", "aux:pass", "4-10", 0.941, 0.825),
    PaperRow("advmod", "advmod", "7-6", 0.488, 0.402),
    PaperRow("mark", "mark", "8-2", 0.507, 0.145),
    PaperRow("ccomp", "ccomp", "8-1", 0.488, 0.124),
    PaperRow("prt", "compound:prt", "6-7", 0.991, 0.914),
    PaperRow("prep", None, "7-4", 0.667, 0.618,
             "no UD counterpart: UD attaches a preposition to its noun (case), not to the word its phrase modifies"),
)
# Figure 2 (top), per layer 1-12 of BERT-base, read off the plot in the same repository's General_Analysis.ipynb
# (±0.03): a reading of a figure, not a published table.
PAPER_FIGURE = {
    "first": (0.06, 0.25, 0.24, 0.14, 0.02, 0.01, 0.01, 0.01, 0.01, 0.02, 0.02, 0.01),
    "end": (0.02, 0.05, 0.07, 0.21, 0.49, 0.55, 0.53, 0.57, 0.58, 0.48, 0.06, 0.07),
    "punctuation": (0.07, 0.11, 0.08, 0.08, 0.05, 0.04, 0.05, 0.05, 0.05, 0.08, 0.51, 0.57),
}
CATEGORIES = tuple(PAPER_FIGURE)


def encoder_patterns(model: ExplorerModel, rows: list[list[int]]):
    """(row index, the encoder's patterns [layers, heads, n, n] cut to the row's n real tokens), every row."""
    for start in range(0, len(rows), BATCH):
        chunk = rows[start: start + BATCH]
        with torch.no_grad(), capture(model.hook_names, attention_hook("encoder", "*", "pattern")) as cache:
            model.forward(model.pad(chunk), None)
        patterns = cache.layers("encoder", "pattern").double().cpu().numpy()       # [rows, layers, heads, S, S]
        for offset, row in enumerate(chunk):
            yield start + offset, patterns[offset, :, :, :len(row), :len(row)]


def category_keys(model: ExplorerModel, ids: list[int]) -> dict[str, list[int]]:
    """Key positions per Figure 2 category: the first token; special tokens after it ([SEP], </s>); periods and
    commas (a piece that is one of them once the tokenizer's word-start mark ▁ or Ġ is taken off)."""
    labels = model.pieces(ids)
    return {"first": [0],
            "end": [p for p in range(1, len(ids)) if ids[p] in model.special_ids],
            "punctuation": [p for p in range(1, len(ids)) if ids[p] not in model.special_ids
                            and labels[p].lstrip("▁Ġ") in PUNCTUATION]}


def token_shares(model: ExplorerModel, texts: list[str]) -> dict:
    """Figure 2 on these sentences: per category, the share of attention per layer (mean over heads, sentences and
    queries), what uniform attention would give (the chosen keys' count / the sentence's length), and each
    sentence's shares per layer."""
    rows = [model.encode(text).ids for text in texts if text.strip()]
    per_sentence = {category: [] for category in CATEGORIES}
    uniform = {category: 0.0 for category in CATEGORIES}
    for index, pattern in encoder_patterns(model, rows):
        keys = category_keys(model, rows[index])
        for category, positions in keys.items():
            # each query's weight on the keys, averaged over queries and heads: [layers]
            per_sentence[category].append(pattern[..., positions].sum(-1).mean(axis=(-1, -2)))
            uniform[category] += len(positions) / len(rows[index])
    count = max(1, len(rows))
    return {"sentences": len(rows),
            "by_layer": {c: [round(float(v), 4) for v in np.atleast_1d(sum(per_sentence[c], 0.0)) / count]
                         for c in CATEGORIES},
            "uniform": {c: round(uniform[c] / count, 4) for c in CATEGORIES},
            "per_sentence": per_sentence}        # category → [layers] per sentence (for intervals; not in the JSON)


def _hits(words: np.ndarray, source: int, target: int) -> np.ndarray:
    """[layers, heads] booleans: the argmax of row `source` of word attention [layers, heads, W, W], itself left
    out, is `target`."""
    row = words[:, :, source, :].copy()
    row[:, :, source] = -np.inf
    return row.argmax(-1) == target


def relation_scores(model: ExplorerModel, trees: list[Tree], relations: set[str]) -> dict:
    """Per relation: the best head (layer-head from 1, direction), its accuracy, the best fixed-offset baseline and
    its offset, the arcs counted; trees whose words the model cannot align are skipped (counted)."""
    aligned = [(tree, model.align_words(tree.words, tree.space_after)) for tree in trees]
    usable = [(tree, a) for tree, a in aligned if a is not None]
    hits: dict[tuple[str, str], np.ndarray] = {}
    counts: dict[str, int] = {}
    offsets: dict[str, dict[int, int]] = {}
    for index, pattern in encoder_patterns(model, [a.ids for _, a in usable]):
        tree, pieces = usable[index]
        words = word_attention(pattern, pieces.word_pieces, keep_special=False)      # [layers, heads, W, W]
        transposed = words.swapaxes(-1, -2)       # row d: how much each word attends to d (Clark's "head<-dep")
        for dependent, (head, relation) in enumerate(zip(tree.heads, tree.relations)):
            if head < 0 or relation not in relations:
                continue
            for direction, matrix in zip(DIRECTIONS, (words, transposed)):
                hits[relation, direction] = hits.get((relation, direction), 0) + _hits(matrix, dependent, head)
            counts[relation] = counts.get(relation, 0) + 1
            offsets.setdefault(relation, {}).setdefault(head - dependent, 0)
            offsets[relation][head - dependent] += 1
    scores = {}
    for relation, count in counts.items():
        accuracy, direction, (layer, index) = max(
            (float(hits[relation, d].max()) / count, d, np.unravel_index(hits[relation, d].argmax(),
                                                                         hits[relation, d].shape))
            for d in DIRECTIONS)
        share, offset = max((offsets[relation].get(o, 0) / count, o) for o in OFFSETS)
        scores[relation] = {"head": f"{layer + 1}-{index + 1}", "direction": direction,
                            "accuracy": round(accuracy, 4), "baseline": round(share, 4), "baseline_offset": offset,
                            "count": count}
    return {"trees": len(usable), "skipped_trees": len(trees) - len(usable), "relations": scores}


def table_rows(scores: dict) -> list[dict]:
    """Table 1's rows beside ours: the paper's relation, its UD counterpart, the paper's head/accuracy/baseline and
    ours (None where UD has no counterpart or the trees had no such arc)."""
    rows = []
    for row in PAPER_TABLE:
        rows.append({"relation": row.paper, "ud": row.ud, "paper": {"head": row.head, "accuracy": row.accuracy,
                                                                    "baseline": row.baseline},
                     "ours": scores.get(row.ud) if row.ud else None, **({"note": row.note} if row.note else {})})
    return rows
