"""The attention papers of the replication bench: Abnar & Zuidema 2020 (rollout and flow), Kobayashi et al. 2020
(weights vs norms), Xiao et al. 2023 (attention sinks on the first token), Jain & Wallace 2019 (permuted attention).
Each measures by capability (the model's attention kinds), never by family."""

from __future__ import annotations

import numpy as np

import explorer.settings as settings
from explorer.analyses.corpus.intervals import mean_interval
from explorer.analyses.corpus.permutation import permutation_effect
from explorer.analyses.sentence.faithfulness import faithfulness_tallies, summary
from explorer.analyses.sentence.layer_shares import layer_shares
from explorer.models.data import read_lines
from explorer.models.interface import Embeds, ExplorerModel, FillsMask
from explorer.papers.bench import (
    CAUSAL,
    DOES_NOT,
    HOLDS,
    PARTLY,
    TOKEN_OUTPUT,
    Budget,
    Card,
    not_measurable,
    paper,
    requires,
    scale_caveat,
    settled,
)
from explorer.settings import command_name

MULTI30K = settings.MULTI30K
TEST, VAL = "test_2016_flickr.en.gz", "val.en.gz"




def sentences(name: str, budget: Budget) -> list[str]:
    return [line for line in read_lines(MULTI30K / name)[: budget.sentences] if line.strip()]


def replicate_command(model: ExplorerModel, name: str, budget: Budget) -> str:
    return (f"python -m explorer replicate --model {command_name(model.path)} --paper {name} "
            f"--sentences {budget.sentences} --json")


# Kobayashi and Xiao read the same traces of the same validation sentences: one pass, kept for the last model.
_LAST_SHARES: list = []


def val_layer_shares(model: ExplorerModel, budget: Budget) -> dict:
    texts = sentences(VAL, budget)
    if _LAST_SHARES and _LAST_SHARES[0] is model and _LAST_SHARES[1] == texts:
        return _LAST_SHARES[2]
    result = layer_shares(model, texts, budget.progress)
    _LAST_SHARES[:] = [model, texts, result]
    return result


def layer_list(values: list[float]) -> str:
    return "/".join(f"{value:.2f}" for value in values)


# ---------------------------------------------------------------- Abnar & Zuidema 2020
ABNAR_ZUIDEMA = dict(
    paper="Abnar & Zuidema 2020, \"Quantifying Attention Flow in Transformers\" (ACL)",
    claim="Attention rollout and attention flow rank the input tokens by importance far better than raw attention: "
          "they correlate much more with blank-out (leave-one-out) importance.",
    setting="A 6-layer Transformer encoder trained to predict verb number (subject–verb agreement); Spearman's ρ of "
            "each attention score with blank-out importance, mean over their test examples, their verb-number "
            "classifier's layer 6.",
    source="Table 1, layer 6",
    paper_value="ρ with blank-out: raw attention 0.29, rollout 0.71, flow 0.70",
)
PAPER_RHO = {"last_layer": 0.29, "rollout": 0.71, "flow": 0.70}
# A gain in ρ over raw attention smaller than this is no support for "far better", however consistent: a random
# model's rollout beats its raw attention by a steady +0.06.
SMALLEST_GAIN = 0.1


def faithfulness_output(model: ExplorerModel) -> str:
    """What the faithfulness measures score for this model (explorer/analyses/sentence/faithfulness.py)."""
    if isinstance(model, Embeds):
        return "the sentence embedding (its cosine similarity to the unchanged sentence's)"
    if isinstance(model, FillsMask):
        return "the masked token's log-probability"
    return "the model's whole greedy output (summed log-probability under teacher forcing)"


def faithfulness_path(model: ExplorerModel) -> str:
    if model.has("cross"):
        return "the last layer's cross-attention carried back by the encoder's rollout or flow"
    return "its own self-attention's last layer, rollout and flow"


@paper("abnar_zuidema")
def abnar_zuidema(model: ExplorerModel, budget: Budget) -> Card:
    texts = sentences(TEST, budget)
    tallies = faithfulness_tallies(model, texts, budget.progress)
    numbers = summary(tallies)
    methods = numbers["methods"]
    if "last_layer" not in methods or "rollout" not in methods:
        return not_measurable(ABNAR_ZUIDEMA, f"none of {len(texts)} Multi30k test sentences could be scored "
                                             f"({numbers['skipped']}).")
    rho = {method: entry["spearman"] for method, entry in methods.items()}
    gradient = {method: entry.get("spearman_gradient_x_input") for method, entry in methods.items()}
    compared = [method for method in ("rollout", "flow") if method in rho]
    # Per sentence, each method's ρ minus raw attention's: its mean and sentence-bootstrap interval. A method beats
    # raw attention only where that interval lies above 0 and the method itself correlates (ρ > 0): a smaller
    # negative ρ than raw attention's, or a lead inside the noise, is no evidence for the claim.
    rows = tallies["per_sentence"]
    gaps = {method: mean_interval([row[method] - row["last_layer"] for row in rows
                                            if method in row and "last_layer" in row],
                                           what=f"ρ({method}) − ρ(last-layer attention), per sentence")
            for method in compared}
    paper_gaps = {method: PAPER_RHO[method] - PAPER_RHO["last_layer"] for method in compared}
    # A method whose gain's interval straddles 0 may beat raw attention or not: the verdict is read with it beating
    # and with it not, and is inconclusive where the two differ.
    undecided = [method for method in compared if gaps[method].low is not None and gaps[method].low <= 0
                 < gaps[method].high]
    beats = [method for method in compared if rho[method] > 0 and gaps[method].low is not None
             and gaps[method].low > 0 and gaps[method].mean >= SMALLEST_GAIN]

    def verdict_if(beating: list[str]) -> str:
        if compared and len(beating) == len(compared) and all(gaps[m].mean >= paper_gaps[m] / 2 for m in beating):
            return HOLDS
        return PARTLY if beating else DOES_NOT
    verdict = settled(verdict_if(beats), verdict_if(beats + undecided))
    shown = [method for method in ("last_layer", "rollout", "flow", "norm") if method in rho]
    titles = {"last_layer": "last-layer attention", "rollout": "rollout", "flow": "flow", "norm": "norm ‖αf(x)‖"}
    ours = (f"ρ with leave-one-out over {numbers['sentences']} Multi30k test sentences: "
            + ", ".join(f"{titles[method]} {rho[method]:.2f}" for method in shown)
            + "; with gradient × input: "
            + ", ".join(f"{titles[method]} {gradient[method]:.2f}" for method in shown
                        if gradient.get(method) is not None)
            + ". Gain over last-layer attention, mean per sentence [95% interval]: "
            + ", ".join(f"{titles[m]} {gaps[m].mean:+.2f} [{gaps[m].low:+.2f}, {gaps[m].high:+.2f}]"
                        for m in compared if gaps[m].mean is not None))
    rule = ("Holds if rollout and flow each correlate (ρ > 0) and beat last-layer attention (ρ with leave-one-out) "
            "by at least half the paper's margin (0.42 and 0.41, so 0.21), the per-sentence gain's sentence-bootstrap "
            "95% interval above 0; partly if at least one correlates and gains at least 0.1 with its interval above 0; "
            "does not otherwise; inconclusive when a gain's interval straddles 0 and the verdict turns on it. "
            f"Ours scores {faithfulness_output(model)}, through {faithfulness_path(model)}, against leave-one-out with "
            f"the unknown token — not one classifier decision of a 6-layer encoder. {scale_caveat(model)}"
            + ("; a shallow model mixes tokens little, so raw attention may already point near the token it reads, "
               "and rollout's and flow's spreading blurs that." if max(map(model.layers, model.kinds)) <= 3 else "."))
    command = (f"python -m explorer faithfulness --model {command_name(model.path)} "
               f"--src explorer/data/multi30k/{TEST} --limit {budget.sentences} --json")
    return Card(**ABNAR_ZUIDEMA, ours=ours, verdict=verdict, rule=rule, command=command, numbers=numbers,
                interval=gaps.get("rollout"))


# ---------------------------------------------------------------- Kobayashi et al. 2020
KOBAYASHI = dict(
    paper="Kobayashi, Kuribayashi, Yokoi & Inui 2020, \"Attention is Not Only a Weight\" (EMNLP)",
    claim="Measured by norm ‖αf(x)‖ rather than by weight α, special tokens and punctuation receive far less "
          "attention: the heavy weights on them multiply short transformed vectors.",
    setting="BERT-base (12 layers × 12 heads): attention to [CLS], [SEP], periods and commas per layer, by weight "
            "and by norm.",
    source="§4 (BERT: does it attend to special tokens?), its per-layer figure of weight vs norm by token category",
    paper_value="qualitative: [SEP], [CLS] and punctuation get large weights (on [SEP] roughly 40–50% of the weight "
                "in the middle layers) but far less by norm; no single number",
)
FAR_LESS = 0.5          # "far less": the share by norm at most half the share by weight
LOWER = 0.9             # "lower" at all: the share by norm at least a tenth below the share by weight


@paper("kobayashi")
def kobayashi(model: ExplorerModel, budget: Budget) -> Card:
    shares = val_layer_shares(model, budget)
    if not shares["sentences"]:
        return not_measurable(KOBAYASHI, "no validation sentence to trace")
    kinds = {kind: {name: values[name] for name in ("weight", "norm", "chance")}
             for kind, values in shares["kinds"].items()}
    every = [(kind, layer) for kind, values in kinds.items() for layer in range(len(values["weight"]))]
    weight = round(sum(kinds[kind]["weight"][layer] for kind, layer in every) / len(every), 4)
    norm = round(sum(kinds[kind]["norm"][layer] for kind, layer in every) / len(every), 4)
    chance = round(sum(kinds[kind]["chance"][layer] for kind, layer in every) / len(every), 4)
    numbers = {"sentences": shares["sentences"], "kinds": kinds, "weight": weight, "norm": norm, "uniform": chance}
    # Per sentence, the share by weight minus the share by norm: the norms take weight away only where that
    # difference's sentence-bootstrap interval lies above 0 (a random model's 0.07 → 0.07 is no evidence).
    removed = mean_interval([row["weight"] - row["norm"] for row in shares.get("per_sentence", []) if row],
                                     what="share by weight − share by norm, per sentence")
    # Lower by a tenth at least, beyond the noise, and only where there is weight beyond uniform attention's to
    # remove: a random model's norms sit a steady 0.001 below its weights, which is no silencing of a sink.
    lower_by_share = norm <= LOWER * weight and weight > chance

    def verdict_if(removed_above_zero: bool) -> str:
        lower = removed_above_zero and lower_by_share
        return HOLDS if weight > 0 and norm <= FAR_LESS * weight and lower else PARTLY if lower else DOES_NOT
    # read on the difference's lower end and on its upper end: inconclusive where its interval straddles 0
    verdict = settled(verdict_if(removed.low is not None and removed.low > 0),
                      verdict_if(removed.high is not None and removed.high > 0))
    per_kind = "; ".join(f"{kind} {layer_list(values['weight'])} by weight → "
                         f"{layer_list(values['norm'])} by norm (uniform {values['chance'][0]:.2f})"
                         for kind, values in kinds.items())
    ours = (f"Share of attention on special tokens and punctuation per layer, {shares['sentences']} Multi30k val "
            f"sentences: {per_kind}. Every layer and kind: {weight:.2f} by weight, {norm:.2f} by norm (uniform "
            f"attention: {chance:.2f}" + ("; by weight these tokens get no more than uniform attention, so there is "
                                          "little excess weight for the norms to remove)." if weight <= chance else ")."))
    if removed.mean is not None:
        ours += (f" Weight minus norm, mean per sentence {removed.mean:+.3f} [95% interval {removed.low:+.3f}, "
                 f"{removed.high:+.3f}].")
    rule = ("Holds if, over every layer of every attention kind, the share by norm is at most half the share by "
            "weight (the paper's \"far less\"); partly if at least a tenth lower but not by half; does not otherwise; "
            "lower only where the weight exceeds uniform attention's share and the per-sentence difference's "
            "sentence-bootstrap 95% interval lies above 0 (inconclusive when it straddles 0 and the verdict turns on "
            "it). The Multi30k sentences are short, so their full stop and end token are a large share of the keys "
            f"(uniform attention's share beside each). {scale_caveat(model)}.")
    return Card(**KOBAYASHI, ours=ours, verdict=verdict, rule=rule,
                command=replicate_command(model, "kobayashi", budget), numbers=numbers, interval=removed)


# ---------------------------------------------------------------- Xiao et al. 2023
XIAO = dict(
    paper="Xiao, Tian, Chen, Han & Lewis 2023, \"Efficient Streaming Language Models with Attention Sinks\" "
          "(StreamingLLM)",
    claim="Above the bottom layers, causal attention concentrates on the initial token (an attention sink), "
          "whatever it is.",
    setting="Llama-2-7B, average attention over 256 sentences of 16 tokens.",
    source="Figure 2",
    paper_value="qualitative: layers 0 and 1 attend locally; beyond the bottom two layers the model attends heavily "
                "to the initial token in all layers and heads",
)
SINK_FACTOR = 2.0       # "clearly": at least twice what uniform attention gives the first token
ABOVE_UNIFORM = 1.25    # partly: the upper layers' mean above uniform attention's share by a quarter


def upper_layers(layers: int) -> list[int]:
    """The paper's "beyond the bottom two layers", keeping at least the top layer of a shallow stack."""
    return list(range(min(2, layers - 1), layers))


@paper("xiao")
def xiao(model: ExplorerModel, budget: Budget) -> Card:
    lacking = requires(XIAO, model, CAUSAL, "Xiao et al.'s claim is about causal attention, where every query sees "
                                            "the first token and the sink forms")
    if lacking:
        return lacking
    shares = val_layer_shares(model, budget)
    if not shares["sentences"]:
        return not_measurable(XIAO, "no validation sentence to trace")
    first = shares["kinds"]["decoder"]["first"]
    chance = shares["kinds"]["decoder"]["first_chance"][0]
    upper = upper_layers(len(first))
    factors = [round(first[layer] / chance, 2) if chance else None for layer in upper]
    upper_mean = sum(first[layer] for layer in upper) / len(upper)
    numbers = {"sentences": shares["sentences"], "first_token_share": first, "uniform": chance,
               "upper_layers": upper, "upper_factors": factors}
    # Per sentence, the upper layers' first-token share over uniform attention's: a sink only where that ratio's
    # sentence-bootstrap interval lies above the factor the verdict names.
    ratio = mean_interval([np.mean([row["first_by_layer"]["decoder"][layer] for layer in upper])
                           / row["uniform_first"]["decoder"]
                           for row in shares.get("per_sentence", []) if row and row["uniform_first"].get("decoder")],
                          what="upper layers' first-token share ÷ uniform attention's, per sentence")
    def verdict_at(end: float | None) -> str:
        if chance and all(factor >= SINK_FACTOR for factor in factors) and end is not None and end >= SINK_FACTOR:
            return HOLDS
        if chance and upper_mean >= ABOVE_UNIFORM * chance and end is not None and end >= ABOVE_UNIFORM:
            return PARTLY
        return DOES_NOT
    verdict = settled(verdict_at(ratio.low), verdict_at(ratio.high))
    stack = "decoder self-attention" if model.has("encoder") else "self-attention"
    ours = (f"First-token share of {stack} per layer, {shares['sentences']} Multi30k val sentences: "
            f"{layer_list(first)} (uniform attention over the allowed keys: {chance:.2f}); "
            f"{'layer' if len(upper) == 1 else 'layers'} {', '.join(map(str, upper))}: "
            + ", ".join(f"{factor}×" for factor in factors) + " uniform."
            + (f" Per sentence, the upper layers' mean over uniform: {ratio.mean:.2f}× [95% interval "
               f"{ratio.low:.2f}, {ratio.high:.2f}]." if ratio.mean is not None else ""))
    rule = (f"Holds if every layer above the bottom two (for a shallow stack: at least the top layer) gives the "
            f"first token at least {SINK_FACTOR:g}× what uniform attention over the allowed keys gives it; partly if "
            f"those layers' mean is at least {ABOVE_UNIFORM:g}× uniform; does not otherwise; each factor also the lower "
            "end of the per-sentence ratio's sentence-bootstrap 95% interval (inconclusive when the verdict turns on "
            "where in the interval the ratio lies). The Multi30k sentences are short (about 15 tokens), where uniform "
            f"causal attention already gives the first token a large share, and {model.name}'s causal stack has "
            f"{model.layers('decoder')} layers, not 32: a sink may form in fewer layers or not at all"
            + ("; an encoder–decoder's first decoder token is its start token, a fixed sink by construction."
               if model.has("encoder") else "."))
    return Card(**XIAO, ours=ours, verdict=verdict, rule=rule, command=replicate_command(model, "xiao", budget),
                numbers=numbers, interval=ratio)


# ---------------------------------------------------------------- Jain & Wallace 2019
JAIN_WALLACE = dict(
    paper="Jain & Wallace 2019, \"Attention is not Explanation\" (NAACL)",
    claim="Attention weights can often be randomly permuted with little change in the model's output, so they "
          "are no faithful explanation of it.",
    setting="Single-layer BiLSTM (and convolutional/average) encoders with one additive attention layer, text "
            "classification (SST, IMDB, 20 News, …), NLI and QA; output change as total variation distance.",
    source="§4.2 (permuting attention weights), its figure of the median output change",
    paper_value="median output change under permutation below 0.05 TV for most text-classification datasets",
)
PAPER_TV = 0.05


@paper("jain_wallace")
def jain_wallace(model: ExplorerModel, budget: Budget) -> Card:
    lacking = requires(JAIN_WALLACE, model, TOKEN_OUTPUT, "the claim is about how far permuting attention moves the "
                                                          "output distribution")
    if lacking:
        return lacking
    texts = sentences(TEST, budget)
    numbers = permutation_effect(model, texts, progress=budget.progress)
    kinds = numbers["kinds"]
    if not numbers["sentences"] or any(entry["tv_median_sentence"] is None for entry in kinds.values()):
        return not_measurable(JAIN_WALLACE, f"none of {len(texts)} Multi30k test sentences could be scored "
                                            f"({numbers['skipped']}).")
    loo = numbers["leave_one_out"]
    if loo["tv_median_sentence"] is None or loo["tv_median_sentence"] < PAPER_TV:
        # The output barely moves even when its most important source token is blanked: permuting attention
        # cannot move it either, so a small change under permutation says nothing about attention.
        return not_measurable(JAIN_WALLACE, "the model's output hardly depends on its input: blanking the most "
                                            "important token by leave-one-out changes it by a median "
                                            f"{loo['tv_median_sentence'] or 0:.2f} TV, below the paper's "
                                            f"{PAPER_TV}, so no change under permutation could be told from it.")
    small = [kind for kind, entry in kinds.items() if entry["tv_median_sentence"] < PAPER_TV]
    verdict = HOLDS if len(small) == len(kinds) else PARTLY if small else DOES_NOT
    what = "the [MASK]'s distribution" if not model.has("decoder") else "each step's next-token distribution"
    per_kind = "; ".join(
        f"{kind} {entry['tv_median_sentence']:.2f} (mean over steps {entry['tv_mean']:.2f}, top token "
        f"kept {entry['top1_agreement']:.0%}" + (f", BLEU vs the original output {entry['bleu']:.1f}"
                                                 if entry["bleu"] is not None else "") + ")"
        for kind, entry in kinds.items())
    ours = (f"Median per-sentence TV of {what} when each kind's attention is permuted, {numbers['sentences']} "
            f"Multi30k test sentences: {per_kind}. Blanking the single most important source token by "
            + (f"leave-one-out: {loo['tv_median_sentence']:.2f} (mean {loo['tv_mean']:.2f})."
               if loo["tv_median_sentence"] is not None else "leave-one-out: no sentence had a token to blank."))
    rule = (f"Holds if the median output change is below the paper's {PAPER_TV} TV for every attention kind; partly "
            "if for some; does not otherwise. Their models were single-layer BiLSTM+attention classifiers, where "
            "the recurrent encoder already mixes the sentence and the one attention layer only pools it; in a "
            "Transformer, multi-layer attention carries the computation (every token's representation"
            + (" and, through cross-attention, the source" if model.has("cross") else "") + "), so large changes "
            "are expected here. Every head of every layer "
            "of the kind is permuted at once (each query over the keys it may see; a fresh permutation each "
            "call, seed 0); the output is teacher-forced on the original greedy output.")
    return Card(**JAIN_WALLACE, ours=ours, verdict=verdict, rule=rule,
                command=replicate_command(model, "jain_wallace", budget), numbers=numbers)
