"""The explorer's corpus jobs (registered in explorer/analyses/jobs/job_registry.py, run by explorer/analyses/jobs/jobs.py):
evaluate, roles, importance, the pruning curve, faithfulness, any registered analysis of heads averaged over
sentences (registered), and the two that importance and the curve are made of: gradient (summed |∂L/∂gate|) and
head-sets (the statistics of a corpus with some heads masked).

Each shard returns additive statistics, never ratios: summed losses and token counts, sacreBLEU's n-gram statistics
(corpus BLEU is not the mean of the shards' BLEU), summed gradients and example counts, role and faithfulness
tallies. The merge adds them up and computes each score once, so one shard here and many on Ray give the same
result: counts and BLEU exactly, summed floats up to rounding. One shard is the corpus as given, in its order, so a
run without workers computes exactly what the one-process analyses compute.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np

from explorer.analyses.corpus import head_tallies
from explorer.analyses.corpus.corpus_scoring import add_statistics, corpus_task, scorer_for, scores_from
from explorer.analyses.corpus.importance import gradient_totals, importance_report
from explorer.analyses.corpus.pruning import pruning_curve
from explorer.analyses.corpus.results import (
    FaithfulnessSummary,
    ImportanceReport,
    PruningCurve,
    RolesReport,
    TextScores,
    TranslationScores,
    evaluation_from_json,
)
from explorer.analyses.corpus.roles import Thresholds, analyse_roles, role_tallies
from explorer.analyses.defaults import RARE_COMMON_TOP
from explorer.analyses.jobs.distributed import SETS_PER_JOB, generation_batch, shards, shards_of, translation_groups
from explorer.analyses.jobs.job_registry import Progress, corpus_job, registered
from explorer.analyses.records import HeadScores
from explorer.analyses.registry import analysis_named
from explorer.analyses.sentence import faithfulness
from explorer.capture.head_sets import HeadSpec, format_heads, head_mask, parse_heads
from explorer.capture.trace import trace_sentence
from explorer.capture.translation import evaluation_scores, evaluation_statistics
from explorer.models.vocabulary import ATTENTION_KINDS


def corpus_key(*parts) -> bytes:
    """What a result depends on besides the model, as bytes for the cache's hash (explorer/analyses/jobs/jobs.py)."""
    return json.dumps(parts, sort_keys=True, ensure_ascii=False, default=lambda value: asdict(value)).encode()


def corpus_shards(model, sources: list[str], references: list[str] | None, parts: int,
                  fix_casing: bool = False) -> list[dict]:
    """A corpus in `parts` shards of whole generation batches (distributed.translation_groups: each sentence is
    translated in the very batch it has in one process); one part: the corpus as given."""
    if parts <= 1:
        return [{"sources": sources, "references": references}]
    return [{"sources": [sources[i] for i in shard],
             "references": None if references is None else [references[i] for i in shard]}
            for shard in shards_of(translation_groups(model, sources, references, fix_casing), parts)]


@corpus_job("evaluate", read=evaluation_from_json)
class Evaluate:
    """BLEU and chrF of a model's translations (with the options' decoding and pruned heads), or the loss and
    perplexity of a text. Options: beam, alpha, fix_casing, pruned (a head spec)."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs, options)

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        return [dict(part, **options) for part in corpus_shards(model, inputs["sources"], inputs["references"], parts,
                                                                options["fix_casing"])]

    def run(model, shard: dict, progress: Progress = None) -> dict:
        pruned = parse_heads(shard["pruned"], model)
        if shard["references"] is None:
            scorer = scorer_for(model, shard["sources"])
            total, tokens = scorer.loss_totals(head_mask(pruned, model))
            return {"loss_sum": total, "tokens": tokens, "examples": scorer.size}
        return evaluation_statistics(model, shard["sources"], shard["references"], shard["beam"], pruned,
                                     shard["alpha"], shard["fix_casing"])

    def merge(model, inputs: dict, options: dict, parts: list) -> TranslationScores | TextScores:
        if inputs["references"] is None:
            scorer, total = corpus_task(model), add_statistics(parts)
            loss, quality = scorer.scores_from_statistics(total)
            return TextScores(round(loss, 4), total["examples"],
                              **{scorer.metric_key: round(quality, 4 if scorer.higher_is_better else 2)})
        # skipped: of the pairs given, those with a blank side (never translated)
        return TranslationScores.from_json(evaluation_scores(parts, len(inputs["sources"])))


@corpus_job("roles", read=RolesReport.from_json)
class Roles:
    """Head roles (explorer/analyses/corpus/roles.py) of plain sentences and/or dependency trees. Inputs: sentences, trees
    (either may be None). Options: thresholds (Thresholds' fields), text_name, treebank_name, common_top (the
    rare-token filter, RARE_COMMON_TOP unless given)."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs["sentences"], inputs["trees"], {"common_top": RARE_COMMON_TOP, **options})

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        sentences, trees = inputs["sentences"], inputs["trees"]
        common = {"kinds": list(options.get("kinds", ATTENTION_KINDS)), "batch_size": options.get("batch_size", 64),
                  "common_top": options.get("common_top", RARE_COMMON_TOP)}
        if parts <= 1:
            return [dict(common, sentences=sentences, trees=trees)]
        sentence_shards = shards(len(sentences), parts)
        tree_shards = shards(len(trees), len(sentence_shards)) if trees else []
        return [dict(common, sentences=sentences[part.start: part.stop],
                     trees=[trees[i] for i in tree_shards[number]] if number < len(tree_shards) else None)
                for number, part in enumerate(sentence_shards)]

    def run(model, shard: dict, progress: Progress = None):
        return role_tallies(model, shard["sentences"], shard["trees"], tuple(shard["kinds"]), shard["batch_size"],
                            progress, shard["common_top"])

    def merge(model, inputs: dict, options: dict, parts: list):
        """The tallies of the whole corpus, in its order (the report is made of them in compute)."""
        return parts[0] if len(parts) == 1 else head_tallies.merge_tallies(parts)

    def compute(model, inputs: dict, options: dict, executor, progress: Progress = None) -> RolesReport:
        def tallies_of(model, sentences, trees, kinds, batch_size, progress, common_top):
            given = {"sentences": sentences, "trees": trees}
            shard_options = dict(options, kinds=list(kinds), batch_size=batch_size, common_top=common_top)
            shards = Roles.shard(model, given, shard_options, executor.parts)
            return Roles.merge(model, given, shard_options, executor.map("roles", shards, progress))

        report = analyse_roles(model, inputs["sentences"], inputs["trees"], Thresholds(**options.get("thresholds", {})),
                               text_name=options.get("text_name", ""), treebank_name=options.get("treebank_name", ""),
                               progress=progress, tallies_of=tallies_of,
                               common_top=options.get("common_top", RARE_COMMON_TOP))
        return RolesReport.from_json(report.to_json())


@corpus_job("gradient")
class Gradient:
    """(kind → [layers, heads] summed |∂L(example)/∂gate|, examples) of a corpus (importance's gradient pass)."""

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        return corpus_shards(model, inputs["sources"], inputs["references"], parts)

    def run(model, shard: dict, progress: Progress = None):
        return gradient_totals(scorer_for(model, shard["sources"], shard["references"]), progress)

    def merge(model, inputs: dict, options: dict, parts: list):
        if len(parts) == 1:
            return parts[0]
        return ({kind: np.sum([part[0][kind] for part in parts], axis=0) for kind in parts[0][0]},
                sum(part[1] for part in parts))


@corpus_job("head-sets")
class HeadSets:
    """[(loss, quality or None)] of a corpus with each head set masked in turn. Options: sets (head specs as text),
    with_quality, metric. On Ray a shard scores SETS_PER_JOB sets on a part of the corpus."""

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        sets = options["sets"]
        size = max(1, len(sets)) if parts <= 1 else SETS_PER_JOB
        chunks = [list(range(start, min(start + size, len(sets)))) for start in range(0, len(sets), size)]
        return [dict(part, sets=[sets[i] for i in chunk], indices=chunk, with_quality=options["with_quality"])
                for chunk in chunks for part in corpus_shards(model, inputs["sources"], inputs["references"], parts)]

    def run(model, shard: dict, progress: Progress = None) -> list[tuple[int, dict]]:
        scorer = scorer_for(model, shard["sources"], shard["references"])
        scored = []
        for number, (index, heads) in enumerate(zip(shard["indices"], shard["sets"]), start=1):
            gates = head_mask(parse_heads(heads, model), model)
            scored.append((index, scorer.statistics(gates, shard["with_quality"])))
            if progress:
                progress(number / len(shard["sets"]))
        return scored

    def merge(model, inputs: dict, options: dict, parts: list) -> list[tuple[float, float | None]]:
        per_set: list[list[dict]] = [[] for _ in options["sets"]]
        for part in parts:
            for index, statistics in part:
                per_set[index].append(statistics)
        scores = [scores_from(add_statistics(statistics), options["metric"]) for statistics in per_set]
        return [(loss, quality if options["with_quality"] else None) for loss, quality in scores]


class ShardedScoring:
    """The gradient totals and head-set scores of a scorer's corpus on an executor: importance_report's engine and
    pruning_curve's set_scores (explorer/analyses/corpus/importance.py, pruning.py)."""

    def __init__(self, executor, scorer, inputs: dict) -> None:
        self.executor, self.model, self.inputs, self.metric = executor, scorer.model, inputs, scorer.metric

    def gradient_totals(self, progress: Progress = None) -> tuple[dict, int]:
        return self._run("gradient", {}, progress)

    def set_scores(self, sets: list[list[HeadSpec]], with_quality: bool, progress: Progress = None) -> list:
        options = {"sets": [format_heads(heads) for heads in sets], "with_quality": with_quality, "metric": self.metric}
        return self._run("head-sets", options, progress)

    def _run(self, name: str, options: dict, progress: Progress):
        job = registered(name)
        shards = job.shard(self.model, self.inputs, options, self.executor.parts)
        return job.merge(self.model, self.inputs, options, self.executor.map(name, shards, progress))


@corpus_job("importance", read=ImportanceReport.from_json)
class Importance:
    """Gradient importance and (with options' ablation, the default) each head masked alone. Inputs: sources,
    references (None for a language model). Options: ablation, corpus_name, roles (spec → roles)."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs, options)

    def compute(model, inputs: dict, options: dict, executor, progress: Progress = None) -> ImportanceReport:
        scorer = scorer_for(model, inputs["sources"], inputs["references"])
        return ImportanceReport.from_json(importance_report(
            scorer, with_ablation=options.get("ablation", True), corpus_name=options.get("corpus_name", ""),
            progress=progress, roles=options.get("roles"), engine=ShardedScoring(executor, scorer, inputs)))


def order_of(scores: dict[HeadSpec, float]) -> list[list]:
    """An importance order as plain data: [kind, layer, head, score] rows (for a job's options)."""
    return [[spec.kind, spec.layer, spec.head, score] for spec, score in scores.items()]


@corpus_job("curve", read=PruningCurve.from_json)
class Curve:
    """Quality as heads are pruned least important first, against random orders (explorer/analyses/corpus/pruning.py).
    Options: orders (name → order_of(scores); "importance" is the main one), kinds, steps, seeds, corpus_name,
    importance_corpus, measure."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs, options)

    def compute(model, inputs: dict, options: dict, executor, progress: Progress = None) -> PruningCurve:
        scorer = scorer_for(model, inputs["sources"], inputs["references"])
        orders = {name: {HeadSpec(kind, layer, head): score for kind, layer, head, score in rows}
                  for name, rows in options["orders"].items()}
        main = orders.pop("importance")
        return PruningCurve.from_json(pruning_curve(
            scorer, main, tuple(options["kinds"]), options["steps"], options["seeds"], progress, other_orders=orders,
            corpus_name=options.get("corpus_name", ""), importance_corpus=options.get("importance_corpus", ""),
            measure=options.get("measure", ""), set_scores=ShardedScoring(executor, scorer, inputs).set_scores))


def sentence_shards(model, sentences: list[str], parts: int, **options) -> list[dict]:
    """Sentences in `parts` shards of whole generation batches (each output is generated in the batch it has in one
    process), each shard with the options; one part: the sentences as given."""
    if parts <= 1:
        return [{"sentences": sentences, **options}]
    size = max(1, generation_batch(model))
    groups = [list(range(start, min(start + size, len(sentences)))) for start in range(0, len(sentences), size)]
    return [{"sentences": [sentences[i] for i in shard], **options} for shard in shards_of(groups, parts)]


@corpus_job("faithfulness", read=FaithfulnessSummary.from_json)
class Faithfulness:
    """Mean Spearman's ρ of attention-derived token scores with leave-one-out (and gradient × input) over
    sentences (explorer/analyses/sentence/faithfulness.py). Inputs: sentences."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs, options)

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        return sentence_shards(model, inputs["sentences"], parts)

    def run(model, shard: dict, progress: Progress = None) -> dict:
        return faithfulness.faithfulness_tallies(model, shard["sentences"], progress)

    def merge(model, inputs: dict, options: dict, parts: list) -> FaithfulnessSummary:
        tallies = parts[0] if len(parts) == 1 else faithfulness.merge_tallies(parts)
        return FaithfulnessSummary.from_json(faithfulness.summary(tallies))



@corpus_job("registered", read=HeadScores.from_json)
class Registered:
    """Any registered analysis of heads (explorer/analyses/registry.py) averaged over sentences: the sum of each
    sentence's HeadScores and their count, so shards add up. Inputs: sentences; options: analysis (its name),
    fix_casing and the analysis's own options."""

    def key(inputs: dict, options: dict) -> bytes:
        return corpus_key(inputs, options)

    def shard(model, inputs: dict, options: dict, parts: int) -> list[dict]:
        return sentence_shards(model, inputs["sentences"], parts, options=options)

    def run(model, shard: dict, progress: Progress = None) -> dict:
        options = dict(shard["options"])
        analysis, fix_casing = analysis_named(options.pop("analysis")), options.pop("fix_casing", False)
        totals, record = None, None
        for number, sentence in enumerate(shard["sentences"]):
            record = analysis.run(model, trace_sentence(model, sentence, fix_casing=fix_casing), **options)
            totals = record.scores if totals is None else {kind: totals[kind] + record.scores[kind] for kind in totals}
            if progress:
                progress((number + 1) / len(shard["sentences"]))
        return {"totals": {kind: values.tolist() for kind, values in (totals or {}).items()},
                "sentences": len(shard["sentences"]), "record": None if record is None else record.to_json()}

    def merge(model, inputs: dict, options: dict, parts: list) -> HeadScores:
        counted = [part for part in parts if part["record"] is not None]
        sentences = sum(part["sentences"] for part in counted)
        totals = {kind: sum(np.asarray(part["totals"][kind]) for part in counted) for kind in counted[0]["totals"]}
        last = HeadScores.from_json(counted[0]["record"])
        return HeadScores(last.measure, {kind: total / sentences for kind, total in totals.items()}, sentences,
                          last.reading)
