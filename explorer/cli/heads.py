"""The head-analysis commands: roles, evolution, importance, prune-curve and heads (the table of every head)."""

from __future__ import annotations

import argparse
import json
import sys

# Ray itself is imported only when workers are asked for.
from explorer.analyses.corpus.corpus_scoring import scorer_by_metric
from explorer.capture.inputs import InputError
from explorer.cli.arguments import distribution_note, progress_bar
from explorer.cli.inputs import opened
from explorer.models.data import CorpusError, read_lines
from explorer.models.interface import TrainingSnapshots
from explorer.teaching.wording import plural


def run_roles(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus.roles import corpus_description
    from explorer.studies import roles_job

    checkpoint = opened(args)
    bar, progress = progress_bar("roles")
    ran = roles_job(checkpoint, args.text, args.conllu, args.limit, args.positional, args.syntactic_margin,
                    args.syntactic_min_count, args.rare_rate, args.rare_over_chance, args.rare_common_top,
                    args.workers, args.ray_address, progress)
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
    from explorer.studies import importance_job

    checkpoint = opened(args)
    bar, progress = progress_bar("importance")
    ran = importance_job(checkpoint, args.src, args.ref, args.limit, args.gradient_only, args.workers,
                         args.ray_address, progress)
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

def run_prune_curve(args: argparse.Namespace) -> None:
    from explorer.studies import prune_curve_job

    checkpoint = opened(args)
    bar, progress = progress_bar("pruning curve")
    ran = prune_curve_job(checkpoint, args.src, args.ref, args.limit, args.importance, args.kinds, args.steps,
                          args.seeds, args.normalisation, args.compare_normalisations, args.workers,
                          args.ray_address, progress, warn=lambda text: print(f"note: {text}", file=sys.stderr))
    bar.close()
    curve = ran.result
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
