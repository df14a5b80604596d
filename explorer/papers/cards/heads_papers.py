"""The head papers of the replication bench: Vaswani et al. 2017 (how many heads), Voita et al. 2019 (head roles and
pruning), Michel et al. 2019 (are sixteen heads better than one), Clark et al. 2019 (what BERT looks at).

Each card measures by capability (an encoder to read a treebank, cross-attention, a translation task for BLEU) and
says what the model lacks instead of a number. The shipped analyses of a bundled model are read as they are; a model
without them gets them computed on the budget's sentences (heads_measures.py).
"""

from __future__ import annotations

import json

import numpy as np

# (not `from explorer.papers.cards import`: the package imports this module)
import explorer.papers.cards.heads_measures as measures
from explorer.analyses.corpus.corpus_scoring import TranslationScorer
from explorer.analyses.corpus.intervals import Interval, difference_interval, share_interval
from explorer.analyses.corpus.pruning import importance_scores, least_important, pruning_curve
from explorer.analyses.corpus.roles import Thresholds
from explorer.analyses.records import IntervalParts
from explorer.analyses.sentence.word_focus import reading_kind
from explorer.capture.head_sets import all_heads, head_mask
from explorer.models.interface import ExplorerModel, Translates
from explorer.models.vocabulary import ATTENTION_KINDS, SHORT_NAMES, Kind
from explorer.papers.bench import (
    DOES_NOT,
    HOLDS,
    PARTLY,
    TRANSLATION,
    Budget,
    Card,
    met,
    not_measurable,
    paper,
    requires,
    scale_caveat,
    verdict_of,
)
from explorer.settings import command_name


def command(model: ExplorerModel, name: str, budget: Budget) -> str:
    return (f"python -m explorer replicate --model {command_name(model.path)} --paper {name} "
            f"--sentences {budget.sentences} --json")


# ——— Vaswani et al. 2017 ————————————————————————————————————————————————————————————————————————————————

VASWANI = dict(
    paper="Vaswani et al. 2017",
    claim="At constant computation, one attention head is clearly worse than several (0.9 BLEU below the best), "
          "and too many heads hurt a little too.",
    setting="Transformer base, WMT 2014 English→German, BLEU on newstest2013 (dev), beam search, d_k = d_v = "
            "d_model / heads",
    source="Table 3, row (A)",
    paper_value="8 heads (base) 25.8 BLEU; 1 head 24.9 (−0.9); 4 heads 25.5; 16 heads 25.8; 32 heads 25.4",
)
SCORES = {"test greedy": ("test_2016_flickr", "bleu_greedy"), "test beam 5": ("test_2016_flickr", "bleu_beam5"),
          "val greedy": ("val", "bleu_greedy")}


@paper("vaswani")
def vaswani(model: ExplorerModel, budget: Budget) -> Card:
    """The bundled h1/h2/h8 (identical but for the heads, d_k = 256 / heads) from their config.json scores."""
    bundled = {}
    for heads, folder in measures.BUNDLED.items():
        if (folder / "config.json").is_file():
            scores = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("scores", {})
            bundled[f"h{heads}"] = {name: scores.get(split, {}).get(key) for name, (split, key) in SCORES.items()}
    if not {"h1", "h8"} <= bundled.keys():
        return not_measurable(VASWANI, "needs the bundled en-de-h1 and en-de-h8 models (with their scores), which "
                                       "this checkout lacks")
    opened = next((name for name, folder in zip(("h1", "h2", "h8"), measures.BUNDLED.values())
                   if _same_folder(model, folder)), None)
    if opened is None:      # the evidence would be the bundled models', which says nothing of this one
        return not_measurable(VASWANI, f"{model.name} is not one of a set of models that differ only in their "
                                       "number of heads; the bundled en-de-h1, h2 and h8 are (their cards say it).")
    # Per score: one head's BLEU minus the best of the bundled head counts (negative: one head is worse).
    gaps = {}
    for name in SCORES:
        values = {label: row[name] for label, row in bundled.items() if row[name] is not None}
        if "h1" in values:
            gaps[name] = round(values["h1"] - max(values.values()), 2)
    worse = [name for name, gap in gaps.items() if gap <= -0.45]
    below = [name for name, gap in gaps.items() if gap < 0]
    verdict = HOLDS if len(worse) * 2 > len(gaps) else PARTLY if len(below) * 2 > len(gaps) else DOES_NOT
    rows = "; ".join(f"{label}{' (open)' if label == opened else ''} " +
                     ", ".join(f"{name} {value:.2f}" for name, value in row.items() if value is not None)
                     for label, row in bundled.items())
    ours = (f"{rows}. One head minus the best: " + ", ".join(f"{n} {g:+.2f}" for n, g in gaps.items()) +
            ". One seed per model: the seed spread is not affordable here (a retraining each), so differences "
            "under ~0.5 BLEU cannot be told from seed noise.")
    rule = ("Holds if one head is at least 0.45 BLEU (half the paper's 0.9) below the best head count on most of "
            "the three scores (test greedy, test beam 5, val greedy); partly if below the best on most but by less; "
            f"does not otherwise. {scale_caveat(model)}: with d_k {model.d_model} a single head is already wide, and "
            "Multi30k's captions leave few distinct relations for several heads to split; one seed each leaves ±0.5 "
            "BLEU unresolved.")
    numbers = {"bundled": bundled, "open_model": opened, "one_head_minus_best": gaps, "seeds_per_model": 1}
    return Card(**VASWANI, ours=ours, verdict=verdict, rule=rule, command=command(model, "vaswani", budget),
                numbers=numbers)


def _same_folder(model: ExplorerModel, folder) -> bool:
    try:
        return model.path.resolve() == folder.resolve()
    except OSError:
        return False


# ——— Voita et al. 2019 ——————————————————————————————————————————————————————————————————————————————————

VOITA = dict(
    paper="Voita et al. 2019",
    claim="A few encoder heads have clear roles (positional, syntactic, rare-token) and do the heavy lifting: most "
          "other heads can be pruned with little loss, cross-attention being the hardest to prune.",
    setting="Transformer base, WMT 2017 English→Russian (and OpenSubtitles), 48 encoder heads (6 layers × 8)",
    source="ACL 2019: §5.1 positional, §5.2 syntactic, §5.3 rare tokens, §6 pruning (Figure 7, Table 2)",
    paper_value="positional heads ≥ 90% of the time at one offset; the rare-token head in layer 1; syntactic heads "
                "≥ +10 points over the positional baseline; 10 of 48 encoder heads kept: −0.15 BLEU; encoder–"
                "decoder attention the most sensitive to pruning",
)
KEPT = 0.2          # ~20% of a kind's heads kept: Voita's 10 of 48
# Below this BLEU a model translates too little for a pruning claim to mean anything: a drop "within 1 BLEU" from
# 0.0 is met by a random model (issue 47: no card may claim holds or partly on such evidence).
MIN_BLEU = 5.0


@paper("voita")
def voita(model: ExplorerModel, budget: Budget) -> Card:
    thresholds = Thresholds()
    roles, roles_shipped = measures.roles_of(model, budget.sentences, measures.staged(budget.progress, 0, 0.4))
    reading = reading_kind(model)
    heads = [h for h in roles["heads"] if h["kind"] == reading]
    numbers, parts, notes = {"roles": "shipped head_roles.json" if roles_shipped else measures.TEXT_NAME,
                             "stack": reading}, {}, []
    positional = max((h for h in heads if h.get("positional")), key=lambda h: h["positional"]["share"], default=None)
    spreads = {}
    if positional:
        share = positional["positional"]
        numbers["positional"] = {"head": positional["spec"], "offset": share["offset"], "share": share["share"]}
        spread = spreads["positional"] = Interval(                 # roles.py's ratio_intervals over sentences
            f"{positional['spec']}'s share of queries at offset {share['offset']:+d}", share["share"],
            share.get("low", share["share"]), share.get("high", share["share"]), roles["corpus"]["text"]["sentences"])
        parts["positional"] = met(spread.low, spread.high, thresholds.positional)
        notes.append(f"most positional {positional['spec']}: {share['share']:.0%} at offset {share['offset']:+d} "
                     f"(95% interval {spread.low:.0%}–{spread.high:.0%})")
    first = max((h for h in heads if h["layer"] == 0 and h.get("rare_token")),
                key=lambda h: h["rare_token"]["rate"], default=None)
    if first:
        rare = first["rare_token"]
        numbers["rare_token_first_layer"] = {"head": first["spec"], "rate": rare["rate"], "chance": rare["chance"]}
        sentences = rare.get("sentences") or roles["corpus"]["text"]["sentences"]
        interval = spreads["rare-token in layer 1"] = share_interval(
            rare["rate"] * sentences, sentences, f"{first['spec']}'s sentences peaking on the rarest token", "sentences")
        parts["rare-token in layer 1"] = met(interval.low, interval.high,
                                             max(thresholds.rare_rate, thresholds.rare_over_chance * rare["chance"]))
        notes.append(f"first-layer rare-token head {first['spec']}: {rare['rate']:.0%} of {sentences} sentences "
                     f"(95% interval {interval.low:.0%}–{interval.high:.0%}) vs chance {rare['chance']:.0%}")
    syntactic = _best_syntactic(heads) if reading is Kind.ENCODER else None
    if syntactic:
        numbers["syntactic"] = syntactic
        count = syntactic["count"]
        interval = spreads["syntactic"] = difference_interval(
            syntactic["accuracy"] * count, syntactic["baseline"] * count, count,
            f"{syntactic['head']} {syntactic['relation']}: accuracy − positional baseline", "arcs")
        parts["syntactic"] = (met(interval.low, interval.high, thresholds.syntactic_margin)
                              if count >= thresholds.syntactic_min_count else False)
        notes.append(f"most syntactic {syntactic['head']} {syntactic['relation']}: {syntactic['accuracy']:.0%} vs "
                     f"baseline {syntactic['baseline']:.0%} ({syntactic['margin'] * 100:+.1f} points, 95% interval "
                     f"{interval.low * 100:+.1f} to {interval.high * 100:+.1f}, {count} arcs)")
    else:
        notes.append("syntactic heads not measurable: no encoder reads the treebank's words")
    pruned = _voita_pruning(model, budget) if isinstance(model, Translates) else None
    if pruned is not None and pruned["unpruned"] < MIN_BLEU:
        numbers["pruning"] = pruned
        notes.append(f"pruning not measurable: the unpruned model scores {pruned['unpruned']:.2f} BLEU (below "
                     f"{MIN_BLEU:g}), too little to lose")
    elif pruned is not None:
        numbers["pruning"] = pruned
        parts["~20% of encoder heads kept within 1 BLEU"] = pruned["drop"]["enc"] <= 1.0
        if Kind.CROSS.short in pruned["drop"]:
            parts["cross-attention hardest to prune"] = pruned["hardest"] == Kind.CROSS.short
        notes.append(f"BLEU on {pruned['pairs']} test pairs {pruned['unpruned']:.2f} unpruned; ~20% of heads kept "
                     "by importance: " + ", ".join(f"{kind} {pruned['kept'][kind]} kept {pruned['bleu'][kind]:.2f} "
                                                   f"({-pruned['drop'][kind]:+.2f})" for kind in pruned["bleu"]) +
                     f"; hardest to prune: {pruned['hardest']}")
    else:
        lacking = requires(VOITA, model, TRANSLATION, "the pruning parts are about BLEU")
        notes.append(f"pruning not measurable: {lacking.rule.rstrip('.') if lacking else 'no BLEU to lose'}")
    if not parts:
        return not_measurable(VOITA, "no head statistics could be measured on this model")
    numbers["met"] = parts
    corpus = roles["corpus"]
    used = f"{corpus['text']['sentences']:,} Multi30k val sentences" + (
        f" and {corpus['treebank']['sentences']:,} UD EWT trees" if corpus.get("treebank") else "")
    notes.insert(0, (f"roles from the shipped head_roles.json ({used}; --sentences does not change them)"
                     if roles_shipped else f"roles measured on {used}"))
    pruning = ""
    if isinstance(model, Translates):
        pruning = " With ~20% of encoder heads kept, BLEU within 1 point of unpruned" + (
            "; cross-attention the kind losing most BLEU with ~20% of its heads kept (encoder, decoder and cross "
            "each pruned alone; one BLEU difference each, whose noise the Michel card's interval measures)"
            if model.has("cross") else "") + "."
    rule = (f"{len(parts)} measurable parts, each met or not; the roles on a 95% interval (a bootstrap over "
            "sentences; Wilson's for the share of sentences; arcs for syntax, head and baseline resampled apart): "
            "met on its lower end, not met when even its upper end falls short, undecided when it straddles the "
            "threshold. "
            "The strongest positional head at one "
            "offset ≥ 90% of the time (Voita et al.'s §5.1). A first-layer head peaking on the rarest token in ≥ 50% "
            "of sentences and ≥ 3× chance (this project's own thresholds: the paper reports its head's rate and sets "
            "none), counted as §5.3 does only in sentences whose rarest token is not among the 500 most frequent. "
            "The best syntactic margin ≥ +10 points over the positional baseline (§5.2) on ≥ 100 arcs (this "
            "project's own count), each treebank sentence read as written and tokenized once, </s> a key a head may "
            f"pick.{pruning} Holds if every measurable part is met, partly if some, does not if none; inconclusive "
            "when an undecided part decides which."
            + (" Heads are pruned by gradient importance (Michel et al.), not Voita's L0 gates." if pruning else "")
            + f" {scale_caveat(model)}; Multi30k's sentences are a few words long, where a rare word is easy to find "
            "and arcs are short.")
    return Card(**VOITA, ours="; ".join(notes) + ".", verdict=verdict_of(parts), rule=rule,
                command=command(model, "voita", budget), numbers=numbers,
                interval=IntervalParts("each part met on its interval's lower end", spreads))


def _best_syntactic(heads: list[dict]) -> dict | None:
    """The (head, relation, direction) with the largest accuracy margin over the positional baseline."""
    best = max(((score["accuracy"] - score["baseline"], h["spec"], f"{relation} {direction}", score)
                for h in heads for relation, scores in (h.get("syntactic") or {}).items()
                for direction, score in scores.items()), default=None, key=lambda item: item[0])
    if best is None:
        return None
    margin, spec, relation, score = best
    return {"head": spec, "relation": relation, "accuracy": score["accuracy"], "baseline": score["baseline"],
            "margin": round(margin, 4), "count": score["count"]}


def _voita_pruning(model: ExplorerModel, budget: Budget) -> dict:
    """BLEU on the budget's test pairs with ~20% of each kind's heads kept (the least important 80% pruned)."""
    report, from_file = measures.importance_of(model, budget.sentences, measures.staged(budget.progress, 0.4, 0.2))
    scores = importance_scores(report)
    scorer = TranslationScorer(model, *measures.pairs("test_2016_flickr", budget.sentences))
    every = all_heads(model)
    unpruned = round(scorer.quality(), 2)
    result = {"pairs": scorer.size, "importance": "shipped head_importance.json" if from_file else "gradient, val",
              "unpruned": unpruned, "kept": {}, "bleu": {}, "drop": {}}
    kinds = [kind for kind in ATTENTION_KINDS if model.has(kind)]
    for done, kind in enumerate(kinds, start=1):
        heads = [h for h in every if h.kind == kind]
        pruned = least_important(scores, 1 - KEPT, heads)
        short = SHORT_NAMES[kind]
        result["kept"][short] = f"{len(heads) - len(pruned)}/{len(heads)}"
        result["bleu"][short] = round(scorer.quality(head_mask(pruned, model)), 2)
        result["drop"][short] = round(unpruned - result["bleu"][short], 2)
        if budget.progress:
            budget.progress(0.6 + 0.4 * done / len(kinds))
    result["hardest"] = max(result["drop"], key=result["drop"].get)
    return result


# ——— Michel et al. 2019 —————————————————————————————————————————————————————————————————————————————————

MICHEL = dict(
    paper="Michel et al. 2019",
    claim="Few heads matter on their own, a large share can be pruned together without a noticeable drop, and "
          "encoder–decoder attention is the most sensitive to pruning.",
    setting="Transformer large, WMT 2014 English→French (newstest2013); 6 layers × 16 heads per kind",
    source="NeurIPS 2019: Table 1 (single heads masked), Figure 3 (pruning by importance), §5 (per-kind pruning)",
    paper_value="8 of 96 encoder self-attention heads change BLEU significantly when masked alone; 20–40% of heads "
                "prunable without a noticeable drop; encoder–decoder attention the most sensitive",
)
RESAMPLES = 500
CURVE_STEPS = 4         # 0, 25, 50, 75, 100% of a kind pruned


@paper("michel")
def michel(model: ExplorerModel, budget: Budget) -> Card:
    lacking = requires(MICHEL, model, TRANSLATION, "the claims are about the BLEU of a translation model (masking a "
                                                   "language model's heads changes its perplexity, not BLEU)")
    if lacking:
        return lacking
    # Single-head ablations are one BLEU run per head (144 for a 6+6-layer, 8-head model): read from the shipped
    # head_importance.json only. Without it the pruning order is gradient importance, computed here (cheap).
    report, from_file = measures.importance_of(model, budget.sentences, measures.staged(budget.progress, 0, 0.1))
    ablated = from_file and any("bleu_change" in h for h in report["heads"])
    numbers = {"importance": "shipped head_importance.json" if from_file else
               f"gradient, computed on {report['corpus']['pairs']} val pairs"}
    parts, notes = {}, []
    if ablated:
        significant, half = _significant_heads(model, report, budget, numbers)
        total, heads = sum(k for k, _ in significant.values()), sum(n for _, n in significant.values())
        parts["few significant alone"] = total < 0.25 * heads
        interval = numbers["bootstrap"]
        notes.append(f"Unpruned BLEU {interval['bleu']:.2f} on {interval['sentences']} val pairs, bootstrap 95% "
                     f"interval ±{interval['half_width']:.2f} (±{half:.2f} scaled to the "
                     f"{numbers['importance_pairs']} pairs of the ablations). Heads whose masking alone moves BLEU "
                     "beyond it: " + ", ".join(f"{kind} {k} of {n}" for kind, (k, n) in significant.items()))
    else:
        notes.append("Single heads masked alone: not measured, this model has no head_importance.json with "
                     f"ablations (create it: python -m explorer importance --model {command_name(model.path)} "
                     "--src VAL.en --ref VAL.de --json, one BLEU run per head)")
    curve = measures.shipped_curve(model)
    kinds = ("enc", "dec", "cross") if curve and "all" in curve.get("kinds", {}) else ("enc", "dec", "cross", "all")
    test = TranslationScorer(model, *measures.pairs("test_2016_flickr", budget.sentences))
    computed = pruning_curve(test, importance_scores(report), kinds=kinds, steps=CURVE_STEPS, seeds=0,
                             progress=measures.staged(budget.progress, 0.4, 0.6))
    every = (curve or computed)["kinds"]["all"]
    if every["importance"][0] < MIN_BLEU:
        return not_measurable(MICHEL, f"the unpruned model scores {every['importance'][0]:.2f} BLEU (below "
                                      f"{MIN_BLEU:g}): it translates too little for pruning to lose anything.")
    point, interpolated = measures.prunable_share(every["fractions"], every["importance"])
    parts["20% prunable within 1 BLEU"] = interpolated >= 0.2
    per_kind = {kind: computed["kinds"][kind]["importance"] for kind in ("enc", "dec", "cross")
                if kind in computed["kinds"]}
    # Collapsing first: the lowest mean BLEU over the partly pruned points (0 and 100% are the same for all).
    inner = {kind: float(np.mean(points[1:-1])) for kind, points in per_kind.items()}
    first = min(inner, key=inner.get)
    if Kind.CROSS.short in per_kind:
        parts["cross collapses first"] = first == Kind.CROSS.short
    fractions = computed["kinds"]["enc"]["fractions"]
    numbers.update({"curve": f"shipped {measures.CURVE_FILE}" if curve else "computed",
                    "prunable_within_1_bleu": {"last_point": point, "interpolated": interpolated},
                    "per_kind_curves": {"pairs": computed["pairs"], "fractions": fractions, **per_kind},
                    "collapses_first": first, "met": parts})
    notes.append(f"Prunable within 1 BLEU (all heads, by importance, {every.get('heads', '')} heads): "
                 f"{interpolated:.0%} (last point within: {point:.0%})")
    notes.append(f"Per kind on {computed['pairs']} test pairs, BLEU at " + "/".join(f"{f:.0%}" for f in fractions)
                 + " pruned: " + "; ".join(f"{kind} " + " ".join(f"{v:.1f}" for v in points)
                                           for kind, points in per_kind.items()) + f"; collapses first: {first}")
    if Kind.CROSS.short not in per_kind:
        notes.append("No cross-attention: the encoder–decoder part is not measurable")
    rule = ("Three parts: fewer than a quarter of all heads change BLEU beyond the sentence-bootstrap 95% interval "
            "when masked alone (Michel: 8 of 96); at least 20% of heads prunable within 1 BLEU (Figure 3's lower "
            "end); encoder–decoder attention has the lowest BLEU over the partly pruned points of the per-kind "
            "curves. Holds if all measurable parts are met, partly if some, does not if none. The interval is a "
            "sentence bootstrap of one translation run, not a paired test, and is scaled by √(n/N) to the "
            f"ablation corpus's size. {scale_caveat(model)}: with {model.layers('encoder') * model.heads} heads per "
            "kind each head carries more of the work than one of Michel's 96.")
    return Card(**MICHEL, ours=". ".join(notes) + ".", verdict=verdict_of(parts), rule=rule,
                command=command(model, "michel", budget), numbers=numbers)


def _significant_heads(model: ExplorerModel, report: dict, budget: Budget, numbers: dict) -> tuple[dict, float]:
    """Per kind [heads whose ablation moves BLEU beyond the bootstrap half-width, heads], and that half-width: the
    bootstrap on the budget's val pairs (the ablations' corpus), scaled to the ablations' number of pairs."""
    corpus_pairs = report["corpus"]["pairs"]
    scorer = TranslationScorer(model, *measures.pairs("val", budget.sentences))
    interval = measures.bootstrap_bleu(scorer.translations(), scorer.references, RESAMPLES)
    half = measures.scaled_half_width(interval["half_width"], interval["sentences"], corpus_pairs)
    significant = {}
    for kind in model.kinds:
        changes = [h["bleu_change"] for h in report["heads"] if h["kind"] == kind and "bleu_change" in h]
        significant[SHORT_NAMES[kind]] = [sum(abs(c) > half for c in changes), len(changes)]
    numbers.update({"importance_pairs": corpus_pairs, "bootstrap": interval, "half_width_at_importance_pairs": half,
                    "significant": significant})
    if budget.progress:
        budget.progress(0.4)
    return significant, half
