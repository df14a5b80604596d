"""Olsson et al. 2022, "In-context Learning and Induction Heads" (Transformer Circuits Thread): induction heads —
heads that attend to the token after an earlier copy of the current one — form in every model with at least two
layers, and their prefix-matching scores stand far above chance.

Ours: explorer/analyses/sentence/detectors.py's detect_heads (the `detect` command at its defaults) on the open model:
the best prefix-matching head (and the best induction-score head) of each self-attention kind against chance (a
uniform head) and a perfect head. A model whose self-attention stacks all have fewer than two layers cannot test the
claim. No bundled model is a language model, so the card points to the live demonstration
(explorer/analyses/lecture/induction_demo.py), which trains a 2-layer model on this CPU until one forms.
"""

from __future__ import annotations

import numpy as np

from explorer.analyses.corpus.intervals import mean_interval
from explorer.analyses.records import IntervalParts
from explorer.analyses.sentence.detectors import DEFAULT_LENGTH, DEFAULT_SEEDS, SELF_ATTENTION, detect_heads
from explorer.models.interface import Continues, ExplorerModel
from explorer.models.vocabulary import Kind
from explorer.papers.bench import CAUSAL, DOES_NOT, HOLDS, PARTLY, Budget, Card, not_measurable, paper, requires, settled
from explorer.settings import command_name

HOLDS_SCORE, HOLDS_TIMES_CHANCE, PARTLY_TIMES_CHANCE = 0.3, 10.0, 3.0
SHORT = {"encoder": "enc", "decoder": "dec"}

CARD = dict(
    paper="Olsson et al. 2022",
    claim=("Induction heads — attending to the token that followed an earlier copy of the current token — form in "
           "every Transformer with at least two layers, with prefix-matching scores far above chance."),
    setting=("Small attention-only Transformers (1–6 layers) and Transformers with MLPs (up to 40 layers, 13B "
             "parameters) trained on text; heads scored on repeated random tokens"),
    source=("Argument 1 (the phase change), the figure of each head's prefix-matching score over training for the "
            "small attention-only and MLP models"),
    paper_value=("induction heads (high prefix matching) form abruptly in every model with ≥ 2 layers, attention-only "
                 "and with MLPs; none in the 1-layer models"),
)
RULE = (f"On the lower end of the 95% bootstrap interval of the score's mean over the random sequences (seeds): "
        f"holds if some head of a self-attention stack with ≥ 2 layers reaches prefix matching ≥ {HOLDS_SCORE} and ≥ "
        f"{HOLDS_TIMES_CHANCE:.0f}× chance (a uniform head); partly if ≥ {PARTLY_TIMES_CHANCE:.0f}× chance; does not "
        "otherwise (a perfect induction head scores 1); inconclusive when the interval's upper end gives another "
        "verdict. The stacks read are the causal ones, where a token sees only what came before it, as in the "
        "paper's language models.")
TRANSLATOR_CAVEAT = (" A small translation model need not have induction heads: its decoder predicts short captions "
                     "from the source through cross-attention, and repeats of earlier target tokens are rare in them, "
                     "so copying from context earns it little, unlike a language model on long text.")




def best_head(detection, kind: str, detector: str) -> dict:
    """The highest-scoring head of one kind for one detector, with chance, a perfect head's score and the interval of
    its mean over the random seeds; the score rounded as the detect command's JSON prints it."""
    values = detection.scores[kind][detector]
    layer, head = np.unravel_index(int(np.argmax(values)), values.shape)
    spec = f"{SHORT[kind]}.{layer}.{head}"
    per_seed = detection.seed_scores[kind][detector][:, layer, head]
    return {"head": spec, "score": round(float(values[layer, head]), 4),
            "chance": detection.chance[kind][detector], "best_possible": detection.ceiling[kind][detector],
            "interval": mean_interval(per_seed, what=f"{spec}'s {detector.replace('_', ' ')} score", unit="seeds")}


def verdict_for(best: dict, end: str = "low") -> str:
    """On one end of the interval over seeds (the lower: a head that reaches the bar only on lucky seeds does not)."""
    score = getattr(best["interval"], end)
    times = score / best["chance"]
    if score >= HOLDS_SCORE and times >= HOLDS_TIMES_CHANCE:
        return HOLDS
    return PARTLY if times >= PARTLY_TIMES_CHANCE else DOES_NOT


def strongest(verdicts) -> str:
    return next(v for v in (HOLDS, PARTLY, DOES_NOT) if v in verdicts)


@paper("olsson")
def olsson(model: ExplorerModel, budget: Budget) -> Card:
    lacking = requires(CARD, model, CAUSAL, "induction heads are a language model's: a token that sees what came "
                                            "after it needs no head to copy what followed its earlier copy")
    if lacking:
        return lacking
    kinds = [kind for kind in SELF_ATTENTION if model.has(kind) and Kind(kind).causal]
    deep = [kind for kind in kinds if model.layers(kind) >= 2]
    if not deep:
        stacks = ", ".join(f"{kind} {model.layers(kind)} layer" for kind in kinds) or "no self-attention"
        return not_measurable(CARD, f"Induction needs two layers (a previous-token head, then a head that reads its "
                                    f"output); this model's self-attention has fewer ({stacks}).")
    detection = detect_heads(model, seeds=DEFAULT_SEEDS, length=DEFAULT_LENGTH)      # the detect command's defaults
    if budget.progress:
        budget.progress(1.0)
    numbers = {"seeds": detection.seeds, "length": detection.length, "kinds": {}}
    for kind in deep:
        numbers["kinds"][kind] = {"layers": model.layers(kind),
                                  "prefix_matching": best_head(detection, kind, "prefix_matching"),
                                  "induction": best_head(detection, kind, "induction")}
    verdict = settled(strongest([verdict_for(values["prefix_matching"]) for values in numbers["kinds"].values()]),
                      strongest([verdict_for(values["prefix_matching"], "high")
                                 for values in numbers["kinds"].values()]))
    parts = []
    for kind, values in numbers["kinds"].items():
        prefix, induction = values["prefix_matching"], values["induction"]
        spread = prefix["interval"]
        parts.append(f"{kind} self-attention ({values['layers']} layers): best prefix matching {prefix['score']:.3f} "
                     f"({prefix['head']}; 95% interval over {spread.count} seeds {spread.low:.3f}–"
                     f"{spread.high:.3f}) vs chance {prefix['chance']:.3f} ({prefix['score'] / prefix['chance']:.1f}×) "
                     f"and 1 for a perfect head; best induction score {induction['score']:.3f} ({induction['head']}) "
                     f"vs chance {induction['chance']:.3f}, best possible {induction['best_possible']:.3f}")
    ours = "; ".join(parts) + "."
    if verdict != HOLDS:
        ours += " The detector finds no induction head here."
    if not isinstance(model, Continues):
        ours += (" This model is no language model: the live demonstration trains a 2-layer one on repeated random "
                 "tokens, where an induction head forms (models/induction_demo.json, "
                 "explorer/analyses/lecture/induction_demo.py).")
    intervals = {kind: values["prefix_matching"]["interval"] for kind, values in numbers["kinds"].items()}
    return Card(**CARD, ours=ours, verdict=verdict, rule=RULE + (TRANSLATOR_CAVEAT if model.has("cross") else ""),
                command=f"python -m explorer detect --model {command_name(model.path)} --json", numbers=numbers,
                interval=IntervalParts("the best prefix-matching head's mean over seeds, per stack", intervals))
