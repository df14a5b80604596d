"""The head atlas's paper on the replication bench: Clark et al. 2019 §6, heads of one layer attend alike
(explorer/analyses/corpus/atlas.py measures the distance between every two heads)."""

from __future__ import annotations

from explorer.analyses.corpus.atlas import layer_grouping, map_statistics, stack_kind
from explorer.models.interface import ExplorerModel
from explorer.papers.bench import DOES_NOT, HOLDS, PARTLY, Budget, Card, not_measurable, paper, scale_caveat, settled
from explorer.papers.cards.attention_papers import VAL, replicate_command, sentences

CLARK_LAYERS = dict(
    paper="Clark, Khandelwal, Levy & Manning 2019, \"What Does BERT Look At?\" (BlackboxNLP)",
    claim="Heads in the same layer often attend alike: laid out by the Jensen–Shannon divergence between their "
          "attention, the heads of one layer fall together.",
    setting="BERT-base (12 layers × 12 heads), attention over 1,000 Wikipedia segments; the distances between heads "
            "embedded in 2-D by multidimensional scaling",
    source="§6 (Clustering attention heads), Figure 6",
    paper_value="qualitative: \"heads within the same layer are often fairly close to each other\"; no number",
)
CLOSER = 0.10       # holds: two heads of one layer at least 10% closer, on average, than two of different layers
AT_LEAST = 0.01     # bits: a difference smaller than this is no grouping (a random model's heads all attend alike)


@paper("clark_layers")
def clark_layers(model: ExplorerModel, budget: Budget) -> Card:
    kind = stack_kind(model, None)
    if model.layers(kind) < 2 or model.heads < 2:
        return not_measurable(CLARK_LAYERS, f"{model.name}'s {kind} has {model.layers(kind)} layer(s) of "
                                            f"{model.heads} head(s): the claim compares two heads of one layer with "
                                            "two of different layers")
    texts = sentences(VAL, budget)
    statistics = map_statistics(model, texts, kind, keep_each=True, progress=budget.progress)
    grouping = layer_grouping(statistics["each"], model.heads)
    interval, within, across = grouping["interval"], grouping["within"], grouping["across"]

    def verdict_at(difference: float) -> str:
        if difference < AT_LEAST:
            return DOES_NOT
        return HOLDS if difference >= CLOSER * across else PARTLY

    verdict = settled(verdict_at(interval.low), verdict_at(interval.high))
    ours = (f"{kind.capitalize()} self-attention heads over {statistics['sentences']} Multi30k val sentences "
            f"({statistics['queries']:,} queries): two heads of one layer {within:.3f} bits apart on average, of "
            f"different layers {across:.3f} ({grouping['pairs_within']} and {grouping['pairs_across']} pairs); "
            f"closer within a layer by {interval.mean:.3f} bits"
            + (f" ({interval.mean / across:.0%} of the distance across" if across else " (every head attends alike")
            + f"; 95% interval {interval.low:.3f}–{interval.high:.3f}). The map: the Atlas page, "
            f"`python -m explorer atlas`.")
    rule = (f"Holds if two heads of one layer are, on average, at least {CLOSER:.0%} closer than two heads of "
            "different layers (Jensen–Shannon divergence in bits between their attention at the same query, averaged "
            "over every query of every sentence, the tokens as the model reads them); partly if closer by less; does "
            f"not if closer by under {AT_LEAST} bits (heads that all attend alike, as a random model's do); read on "
            "both ends of the difference's sentence-bootstrap 95% interval (inconclusive "
            "when they disagree). Clark et al. report the clustering by eye on a 2-D map; the threshold is this "
            f"project's own. {scale_caveat(model)}.")
    numbers = {"sentences": statistics["sentences"], "queries": statistics["queries"], "stack": kind,
               "within": within, "across": across, "pairs_within": grouping["pairs_within"],
               "pairs_across": grouping["pairs_across"]}
    return Card(**CLARK_LAYERS, ours=ours, verdict=verdict, rule=rule,
                command=replicate_command(model, "clark_layers", budget), numbers=numbers, interval=interval)
