"""Clark et al. 2019 ("What Does BERT Look At?") as a card of the replication bench; the measurements are
clark_measures.py's. Registered right after heads_papers' cards (explorer/papers/cards/__init__.py keeps the order)."""

from __future__ import annotations

import numpy as np

import explorer.papers.cards.clark_measures as clark_measures

# (not `from explorer.papers.cards import`: the package imports this module)
import explorer.papers.cards.heads_measures as measures
from explorer.analyses.corpus.intervals import Interval, difference_interval, mean_interval
from explorer.analyses.records import IntervalParts
from explorer.capture.treebank import read_trees
from explorer.models.interface import ExplorerModel, Translates
from explorer.papers.bench import ENCODER, Budget, Card, met, paper, requires, scale_caveat, verdict_of
from explorer.papers.cards.heads_papers import command

# ——— Clark et al. 2019 ——————————————————————————————————————————————————————————————————————————————————

CLARK = dict(
    paper="Clark et al. 2019",
    claim="Single heads track specific syntactic relations far above a fixed-offset baseline, and much attention "
          "goes to delimiters: [CLS] in early layers, [SEP] in the middle ones (over half of it in layers 6–10), "
          "periods and commas in the last.",
    setting="BERT-base (12 layers × 12 heads): attention on 1,000 Wikipedia segments (Figure 2), Stanford "
            "Dependencies of the Penn Treebank WSJ (Table 1)",
    source="BlackboxNLP 2019: §3.2 and Figure 2 (attention to [CLS], [SEP], periods and commas by layer), §4.2 and "
           "Table 1 (best head per relation vs the best fixed offset). Table 1's values are those printed by the "
           "cell of the authors' notebook (github.com/clarkkev/attention-analysis, Syntax_Analysis.ipynb) that "
           "produces it, heads counted from 1; Figure 2's are read off its plot (General_Analysis.ipynb, ±0.03)",
    paper_value="det 8-11 94.3% vs baseline 51.7%; dobj 8-10 86.8% vs 40.0%; pobj 9-6 76.3% vs 34.6%; poss 7-6 "
                "80.5% vs 47.7%; nsubj 8-2 58.5% vs 45.5%; amod 4-10 75.6% vs 68.3%; [SEP] over half of the "
                "attention in layers 6–10 (0.48–0.58 per layer), [CLS] about 0.25 in layers 2–3, periods and commas "
                "about 0.5 in layers 11–12",
)
CORE = ("obj", "det", "nsubj", "amod")
MARGIN = 0.10               # points over the baseline a relation's best head needs
TREES_PER_SENTENCE = 5      # UD EWT trees per budget sentence: a relation occurs a few times a sentence at most
CATEGORY_NAMES = {"first": "first token", "end": "end token", "punctuation": "periods/commas"}


def margin_interval(intervals: dict[str, Interval], row: dict) -> str:
    interval = intervals.get(row["ud"])
    return "" if not interval else (f", margin 95% interval {interval.low * 100:+.1f} to "
                                    f"{interval.high * 100:+.1f} points")


def share_interval_text(interval: Interval) -> str:
    return "" if interval.low is None else f" (95% interval {interval.low:.2f}–{interval.high:.2f})"


def first_token(model: ExplorerModel) -> str:
    """What stands first in the sentence as this model reads it: a special token it adds ([CLS]), or the first word."""
    ids = model.encode("a dog").ids
    if ids and ids[0] in model.special_ids:
        return f"The first token is {model.pieces(ids[:1])[0]}, which the model adds to every sentence."
    return "The model adds no token before the sentence, so its first word stands first."


@paper("clark")
def clark(model: ExplorerModel, budget: Budget) -> Card:
    lacking = requires(CLARK, model, ENCODER, "a model that reads left to right cannot attend from a word to its "
                                              "dependents on its right, and Clark et al.'s measure needs that")
    if lacking:
        return lacking
    shares = clark_measures.token_shares(model, measures.read_lines(measures.MULTI30K / "val.en.gz")
                                         [: budget.sentences])
    per_sentence_end = shares.pop("per_sentence")["end"]
    if budget.progress:
        budget.progress(0.3)
    trees = read_trees(measures.EWT, TREES_PER_SENTENCE * budget.sentences, subtypes=True)
    scores = clark_measures.relation_scores(model, trees, {row.ud for row in clark_measures.PAPER_TABLE if row.ud})
    table = clark_measures.table_rows(scores["relations"])
    by_layer = shares["by_layer"]
    end = by_layer["end"]
    peak = int(np.argmax(end))
    core = [row for row in table if row["ud"] in CORE and row["ours"]]
    intervals = {row["ud"]: difference_interval(row["ours"]["accuracy"] * row["ours"]["count"],
                                                row["ours"]["baseline"] * row["ours"]["count"], row["ours"]["count"],
                                                f"{row['ud']}: best head {row['ours']['head']} − best fixed offset",
                                                "arcs") for row in core}
    # On the lower ends, relations surely beaten; on the upper ends, those that may be: 3 of 4 needed
    surely = sum(met(intervals[row["ud"]].low, intervals[row["ud"]].high, MARGIN) is True for row in core)
    maybe = sum(met(intervals[row["ud"]].low, intervals[row["ud"]].high, MARGIN) is not False for row in core)
    parts: dict[str, bool | None] = {"syntactic": True if surely >= 3 else False if maybe < 3 else None} if core else {}
    intervals["end token"] = mean_interval([float(np.atleast_1d(values)[peak]) for values in per_sentence_end],
                                           what=f"layer {peak + 1}'s share of attention on the end token")
    parts["end token"] = peak > 0 and met(intervals["end token"].low, intervals["end token"].high, 0.5)
    numbers = {"token_shares": shares, "trees": scores["trees"], "skipped_trees": scores["skipped_trees"],
               "relations": table, "paper_figure_2": clark_measures.PAPER_FIGURE, "met": parts}
    measured = [row for row in table if row["ours"]]
    syntax = "; ".join(f"{row['relation']}→{row['ud']} {row['ours']['head']} {row['ours']['accuracy']:.1%} vs "
                       f"{row['ours']['baseline']:.1%} ({row['ours']['count']} arcs{margin_interval(intervals, row)}; "
                       f"paper {row['paper']['head']} "
                       f"{row['paper']['accuracy']:.1%} vs {row['paper']['baseline']:.1%})" for row in measured)
    layers = "; ".join(f"layer {layer + 1} " + "/".join(f"{by_layer[c][layer]:.2f}" for c in CATEGORY_NAMES)
                       for layer in range(len(end)))
    ours = (f"Best head per relation (Stanford → UD, layer-head from 1) on {scores['trees']} UD EWT dev trees: "
            f"{syntax or 'no relation found (no tree aligned with the model’s pieces)'}. Share of attention on the "
            f"first token / end token / periods and commas, mean over heads, by layer on {shares['sentences']} "
            f"Multi30k val sentences: {layers} (uniform attention: " +
            "/".join(f"{shares['uniform'][c]:.2f}" for c in CATEGORY_NAMES) + f"); end token peaks in layer "
            f"{peak + 1}{share_interval_text(intervals['end token'])}.")
    rule = ("Two parts, each on the lower end of a 95% bootstrap interval: the best head beats the best "
            "fixed-offset baseline by ≥ 10 points on at least 3 of obj, det, nsubj, amod (arcs resampled, head and "
            "baseline apart); and the layer above the first with most attention on the end-of-sentence token "
            "([SEP], </s>) puts ≥ 50% there (sentences resampled). Holds if both are met, partly if one, does not "
            "if none. Each treebank sentence is read as written and tokenized once; as in Clark et al.'s code, "
            "special tokens are left out of the argmax. Relations are UD (obj for dobj, "
            "nmod:poss for poss, aux:pass for auxpass, compound for nn, compound:prt for prt, case for pobj: the "
            "same two words with the arc reversed; SD's prep has no UD arc), scored word-level in both directions "
            f"as the paper does, a word's attention to itself left out. {first_token(model)} The Multi30k sentences "
            "are ~12 pieces where Clark et al. read 128-piece segments with two [SEP]s, so uniform attention already "
            f"gives the end token and the full stop a large share (shown). {scale_caveat(model)}"
            + ("; a pretrained BERT such as all-MiniLM-L6-v2 (6 layers) is the closer comparison." if
               isinstance(model, Translates) else "."))
    return Card(**CLARK, ours=ours, verdict=verdict_of(parts), rule=rule, command=command(model, "clark", budget),
                numbers=numbers, interval=IntervalParts("each part met on its interval's lower end", intervals))
