"""The head-analysis commands: roles, evolution, importance, prune-curve and heads (the table of every head)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

# Ray itself is imported only when workers are asked for.
from explorer.analyses.corpus.corpus_scoring import scorer_by_metric
from explorer.analyses.corpus.results import ImportanceReport
from explorer.analyses.corpus.roles import Thresholds
from explorer.analyses.jobs.jobs import run_job
from explorer.capture.head_sets import HeadSpecError
from explorer.capture.inputs import InputError
from explorer.cli.arguments import distribution_note, progress_bar
from explorer.cli.inputs import opened, read_corpus
from explorer.models.data import CorpusError, read_lines
from explorer.models.interface import TrainingSnapshots
from explorer.teaching.wording import plural


def run_roles(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus.roles import corpus_description
    from explorer.capture.treebank import read_trees

    if not args.text and not args.conllu:
        raise InputError("roles needs --text FILE (plain sentences), --conllu FILE (dependency trees) or both")

    checkpoint = opened(args)
    sentences = read_lines(args.text)[: args.limit] if args.text else None
    if args.text and not any(s.strip() for s in sentences):
        raise CorpusError(f"{args.text}: no sentences")
    trees = read_trees(args.conllu, args.limit) if args.conllu else None
    thresholds = Thresholds(args.positional, args.syntactic_margin, args.syntactic_min_count, args.rare_rate,
                            args.rare_over_chance)
    bar, progress = progress_bar("roles")
    ran = run_job("roles", checkpoint, {"sentences": sentences, "trees": trees},
                  {"thresholds": asdict(thresholds), "text_name": args.text.name if args.text else "",
                   "treebank_name": args.conllu.name if args.conllu else "", "common_top": args.rare_common_top},
                  args.workers, args.ray_address, progress, cache_folder=None)
    bar.close()
    report = ran.result
    if args.json:
        document = report.to_json()
        distribution_note(ran.distributed, document)
        print(json.dumps(document, ensure_ascii=False))
        return
    print(f"{'head':<11} {'roles':<30} {'conf':>5} {'offset':>6} {'share':>6} {'rare':>5} {'chance':>6}  syntactic relations")
    for head in report.heads:
        positional, rare = head.positional, head.rare_token
        print(f"{head.spec:<11} {', '.join(head.roles) or '-':<30} {head.confidence:5.2f} "
              f"{positional.offset if positional else '':>6} {positional.share if positional else '':>6} "
              f"{rare.rate if rare else '':>5} {rare.chance if rare else '':>6}  "
              f"{', '.join(head.syntactic_relations)}")
    print(f"{corpus_description(report)}; {report.seconds:.1f} s")

def run_evolution(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus.head_evolution import find_snapshots, head_evolution

    checkpoint = opened(args)
    if not isinstance(checkpoint, TrainingSnapshots):
        raise InputError(f"{args.model}: evolution follows the explorer's own training snapshots "
                         "(epoch-N.safetensors); this model takes none")
    sentences = [s for s in read_lines(args.text)[: args.limit] if s.strip()]
    if not sentences:
        raise CorpusError(f"{args.text}: no sentences")
    snapshots = find_snapshots(args.snapshots, args.every)
    bar, progress = progress_bar("evolution")
    result = head_evolution(checkpoint, snapshots, sentences, args.text.name, progress=progress)
    bar.close()
    print(json.dumps(result))

def run_importance(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus.shipped_analyses import ROLES_FILE, shipped_report

    checkpoint = opened(args)
    sources, references = read_corpus(args, checkpoint)
    shipped_roles = shipped_report(checkpoint, ROLES_FILE)
    roles = {head.spec: head.roles for head in shipped_roles.heads} if shipped_roles else {}
    bar, progress = progress_bar("importance")
    ran = run_job("importance", checkpoint, {"sources": sources, "references": references},
                  {"ablation": not args.gradient_only, "corpus_name": args.src.name, "roles": roles},
                  args.workers, args.ray_address, progress, cache_folder=None)
    bar.close()
    report = ran.result
    if args.json:
        document = report.to_json()
        distribution_note(ran.distributed, document)
        print(json.dumps(document))
        return
    scorer = scorer_by_metric(report.quality)        # the metric the report names: its key, what an example is
    change = f"{scorer.metric_key}_change"
    print(f"{'head':<11} {'gradient':>11} {'normalised':>10} {'Δloss':>8} {'Δ' + report.quality:>11}")
    for head in sorted(report.heads, key=lambda h: -h.gradient_importance):
        loss_change, quality_change = head.loss_change, head.measure(change)
        print(f"{head.spec:<11} {head.gradient_importance:11.4g} {head.gradient_importance_normalised:10.3f} "
              f"{float('nan') if loss_change is None else loss_change:8.4f} "
              f"{float('nan') if quality_change is None else quality_change:11.2f}")
    print(f"{report.corpus.examples} {scorer.example_word}s in {report.seconds:.1f} s "
          f"(gradient pass {report.gradient_seconds:.1f} s)")

def importance_for_curve(args: argparse.Namespace, checkpoint, sources: list[str],
                         references: list[str] | None) -> ImportanceReport:
    """--importance FILE, else the model's head_importance.json, else gradient importance on this corpus."""
    from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, shipped_report

    if args.importance:
        try:
            report = json.loads(args.importance.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise InputError(f"{args.importance}: not a readable importance report ({error.__class__.__name__}); "
                             "write one with `python -m explorer importance ... --json`") from None
        if not isinstance(report, dict) or not isinstance(report.get("heads"), list):
            raise InputError(f"{args.importance}: not an importance report (no list of heads)")
        return ImportanceReport.from_json(report, source=str(args.importance))
    report = shipped_report(checkpoint, IMPORTANCE_FILE)
    if report is not None:
        return report
    print(f"note: {args.model} has no {IMPORTANCE_FILE}; pruning in the order of gradient importance on "
          f"{args.src.name} itself (in-sample; --importance FILE gives an order measured elsewhere)", file=sys.stderr)
    return run_job("importance", checkpoint, {"sources": sources, "references": references},
                   {"ablation": False, "corpus_name": args.src.name, "roles": {}}, args.workers, args.ray_address,
                   cache_folder=None).result

def run_prune_curve(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus.pruning import CURVE_KINDS, NORMALISATIONS, importance_scores
    from explorer.analyses.jobs.corpus_jobs import order_of

    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in CURVE_KINDS]
    if unknown or not kinds:
        raise HeadSpecError(f"--kinds: {', '.join(unknown) or 'nothing'} is not one of {', '.join(CURVE_KINDS)}")
    checkpoint = opened(args)
    sources, references = read_corpus(args, checkpoint)
    report = importance_for_curve(args, checkpoint, sources, references)
    orders = {"importance": order_of(importance_scores(report, args.normalisation))}
    if args.compare_normalisations:
        orders.update({name: order_of(importance_scores(report, name)) for name in NORMALISATIONS
                       if name != args.normalisation})
    bar, progress = progress_bar("pruning curve")
    ran = run_job("curve", checkpoint, {"sources": sources, "references": references},
                  {"orders": orders, "kinds": list(kinds), "steps": args.steps, "seeds": max(0, args.seeds),
                   "corpus_name": args.src.name, "importance_corpus": report.corpus.name,
                   "measure": args.normalisation}, args.workers, args.ray_address, progress, cache_folder=None)
    bar.close()
    curve = ran.result
    if not curve.kinds:
        raise HeadSpecError(f"--kinds {args.kinds}: {args.model} has none of these kinds of attention")
    if args.json:
        document = curve.to_json()
        distribution_note(ran.distributed, document)
        print(json.dumps(document))
        return
    for kind, data in curve.kinds.items():
        others = data.other_orders or {}
        other = "".join(f" | {name}" for name in others)
        print(f"{kind} ({plural(data.heads, 'head')}): fraction pruned → {curve.quality} by importance "
              f"({args.normalisation}){other} | random mean ± std")
        for i, fraction_pruned in enumerate(data.fractions):
            spread = (f"{data.random_mean[i]:6.2f} ± {data.random_std[i]:.2f}" if data.random_mean else "")
            others_text = "".join(f" | {points[i]:6.2f}" for points in others.values())
            print(f"  {fraction_pruned:4.0%} ({plural(data.pruned[i], 'head'):>8})  {data.importance[i]:6.2f}{others_text}"
                  f" | {spread}")
    print(f"{curve.pairs} {scorer_by_metric(curve.quality).example_word}s, {curve.seconds:.1f} s")

def run_heads(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus.head_table import head_rows, head_table
    from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, ROLES_FILE, shipped_report

    checkpoint = opened(args)
    roles, importance = shipped_report(checkpoint, ROLES_FILE), shipped_report(checkpoint, IMPORTANCE_FILE)
    if not roles and not importance:
        raise InputError(f"{args.model}: has no {ROLES_FILE} or {IMPORTANCE_FILE}; compute them with the roles and "
                         "importance commands (scripts/ship_analyses.sh writes both)")
    table = head_table(roles, importance)
    if args.json:
        print(json.dumps({"model": checkpoint.name, "heads": head_rows(table)}, ensure_ascii=False))
    else:
        import pandas as pd

        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
            print(table.to_string(float_format=lambda value: f"{value:.3f}"))
