"""python -m explorer: translate (or generate), evaluate, trace and analyse heads from the command line, on the
explorer's own models and on Hugging Face models (Marian, BART, M2M100/NLLB, T5, BERT, GPT-2).

Every anticipated failure (bad checkpoint, unreadable or misaligned corpus, wrong head spec, empty sentence)
prints one line starting with "error:" and exits non-zero, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from models.interface import FILL_MASK, TRANSLATE, ModelError, TrainingSnapshots, target_languages
from models.data import CorpusError, file_bytes, read_lines
from explorer.analyses.corpus import corpus_examples
# Ray itself is imported only when workers are asked for.
from explorer.analyses.distributed import DistributedError, engine_for, tallies_on, workers_for
from explorer.capture.head_sets import HeadSpecError, parse_heads
from explorer.capture.inputs import InputError
from explorer.analyses.roles import Thresholds
from explorer.capture.sampling_options import add_sampling_arguments, sampling_from_arguments
from explorer.teaching.wording import plural
from explorer.cli.arguments import (distribution_note, fraction, positive_int, progress_bar, with_model_path,
                                    with_workers)
# The analyses' subcommands, each in a module of its own (add_command, run)
from explorer.cli import detect as cli_detect, faithfulness as cli_faithfulness, patch as cli_patch
from explorer.cli import replicate as cli_replicate, sinks as cli_sinks

USER_ERRORS = (ModelError, CorpusError, HeadSpecError, InputError, DistributedError)


def with_normalisation(sub: argparse.ArgumentParser) -> None:
    from explorer.analyses.pruning import DEFAULT_NORMALISATION, NORMALISATIONS

    sub.add_argument("--normalisation", choices=list(NORMALISATIONS), default=DEFAULT_NORMALISATION,
                     help="order heads by raw gradient importance or by importance normalised per layer "
                          "(Michel et al.); default %(default)s, which pruned better on held-out data")


def with_corpus(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--src", required=True, type=Path,
                     help="source sentences, one per line (plain or .gz); for BERT and GPT-2 the text to score")
    sub.add_argument("--ref", type=Path, help="references aligned with --src (translation models; not for BERT/GPT-2)")
    sub.add_argument("--limit", type=positive_int, help="only the first N lines (sentence pairs)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m explorer",
                                     description="Look inside a Transformer: the bundled English→German models, or a "
                                                 "Hugging Face Marian, BART, M2M100/NLLB, T5, BERT or GPT-2 folder.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_model(sub: argparse.ArgumentParser, decoding: bool = True) -> None:
        with_model_path(sub)
        if decoding:
            sub.add_argument("--beam", type=positive_int, default=1, help="beam size (1: greedy, the default)")
            sub.add_argument("--length-penalty", type=float, default=0.6, metavar="ALPHA",
                             help="beam score = log-prob / ((5 + length) / 6) ** ALPHA (GNMT; default 0.6)")
            sub.add_argument("--prune", default="", metavar="SPEC",
                             help="heads to mask, e.g. enc.0.3,dec.2.*,cross.1.5")
            sub.add_argument("--prune-least-important", type=fraction, metavar="FRACTION",
                             help="also mask this fraction of all heads, least important first (the checkpoint's "
                                  "head_importance.json, gradient importance)")
            with_normalisation(sub)
            sub.add_argument("--target-language", metavar="CODE",
                             help="the output language of a multilingual model (M2M100: de, fr …; NLLB: deu_Latn …)")
            sub.add_argument("--keep-casing", action="store_true",
                             help="feed all-caps or all-lower-case sentences as typed (by default they are put in "
                                  "sentence case, as the training captions are written)")

    translate = commands.add_parser("translate", help="print one translation per sentence")
    with_model(translate)
    add_sampling_arguments(translate)
    translate.add_argument("text", nargs="+", metavar="TEXT", help="English sentences")
    generate = commands.add_parser("generate", help="print the continuation of each text (GPT-2; for a translation "
                                                    "model the same as translate)")
    with_model(generate)
    add_sampling_arguments(generate)
    generate.add_argument("text", nargs="+", metavar="TEXT", help="prompts")

    evaluate = commands.add_parser("evaluate", help="BLEU and chrF on a parallel corpus (loss and perplexity on a text "
                                                    "file for BERT and GPT-2)")
    with_model(evaluate)
    with_corpus(evaluate)
    with_workers(evaluate)
    evaluate.add_argument("--json", action="store_true", help="print exactly one JSON object")

    trace = commands.add_parser("trace", help="save every attention, mask, PE and decoding step of a sentence")
    with_model(trace)
    trace.add_argument("--text", required=True, help="the English sentence")
    trace.add_argument("--out", required=True, type=Path, help="FILE.npz or FILE.json")
    trace.add_argument("--top-k", type=positive_int, default=10, help="probabilities kept per decoding step")
    trace.add_argument("--words", action="store_true",
                       help="save attention over words, not pieces (Clark et al. 2019: to a word the sum over its "
                            "pieces, from a word the mean; explorer/capture/words.py)")
    roles = commands.add_parser("roles", help="classify heads as positional / syntactic / rare-token")
    with_model(roles, decoding=False)
    roles.add_argument("--text", type=Path,
                       help="in-domain English sentences, one per line (plain or .gz), for the positional, rare-token "
                            "and confidence statistics (without it: the treebank's sentences)")
    roles.add_argument("--conllu", type=Path, help="dependency trees, CoNLL-U (plain or .gz), for syntactic roles")
    roles.add_argument("--limit", type=positive_int, help="only the first N sentences of each file")
    roles.add_argument("--json", action="store_true", help="print exactly one JSON object")
    with_workers(roles)
    defaults = Thresholds()
    roles.add_argument("--positional", type=float, default=defaults.positional,
                       help="share of tokens whose top weight sits at one offset (default %(default)s)")
    roles.add_argument("--syntactic-margin", type=float, default=defaults.syntactic_margin,
                       help="accuracy above the positional baseline (default %(default)s)")
    roles.add_argument("--syntactic-min-count", type=positive_int, default=defaults.syntactic_min_count,
                       help="occurrences a relation needs (default %(default)s)")
    roles.add_argument("--rare-rate", type=float, default=defaults.rare_rate,
                       help="share of sentences whose top token is the rarest (default %(default)s)")
    roles.add_argument("--rare-over-chance", type=float, default=defaults.rare_over_chance,
                       help="and at least this multiple of chance (default %(default)s)")

    evolution = commands.add_parser("evolution", help="head statistics at every training epoch, from its snapshots")
    with_model(evolution, decoding=False)
    evolution.add_argument("--snapshots", required=True, type=Path, help="folder of epoch-N.safetensors files")
    evolution.add_argument("--text", required=True, type=Path, help="in-domain English sentences, one per line")
    evolution.add_argument("--every", type=positive_int, default=1, help="every N-th epoch (and the last)")
    evolution.add_argument("--limit", type=positive_int, help="only the first N sentences")

    heads = commands.add_parser("heads", help="the table of heads: roles, their scores and importance, from the "
                                              "checkpoint's head_roles.json and head_importance.json")
    with_model(heads, decoding=False)
    heads.add_argument("--json", action="store_true", help="one JSON object: head → its row")

    importance = commands.add_parser("importance", help="gradient-based and ablation importance of every head")
    with_model(importance, decoding=False)
    with_corpus(importance)
    with_workers(importance)
    importance.add_argument("--gradient-only", action="store_true", help="skip the (slower) one-head ablations")
    importance.add_argument("--json", action="store_true", help="print exactly one JSON object")
    curve = commands.add_parser("prune-curve", help="BLEU (perplexity for BERT and GPT-2) as heads are pruned, by "
                                                    "importance versus random order")
    with_model(curve, decoding=False)
    with_corpus(curve)
    with_workers(curve)
    curve.add_argument("--importance", type=Path, metavar="FILE",
                       help="the order to prune in: a report of the importance command (--json); default: the "
                            "model's head_importance.json, or, where it has none, gradient importance measured on "
                            "this corpus (in-sample)")
    curve.add_argument("--kinds", default="enc,dec,cross,all", help="comma-separated from enc, dec, cross, all")
    curve.add_argument("--steps", type=positive_int, default=10, help="points after the unpruned one (default 10)")
    curve.add_argument("--seeds", type=int, default=3, help="random orders to average (default 3)")
    with_normalisation(curve)
    curve.add_argument("--compare-normalisations", action="store_true",
                       help="also draw the order of the other normalisation")
    curve.add_argument("--json", action="store_true", help="print exactly one JSON object")
    cli_detect.add_command(commands)        # head detectors (explorer/cli/detect.py)
    cli_patch.add_command(commands)         # activation patching (explorer/cli/patch.py)
    cli_faithfulness.add_command(commands)  # attention against leave-one-out (explorer/cli/faithfulness.py)
    cli_sinks.add_command(commands)         # attention sinks (explorer/cli/sinks.py)
    cli_replicate.add_command(commands)     # the replication bench (explorer/cli/replicate.py)
    return parser


def model_for(args: argparse.Namespace):
    """The model of --model, translating into --target-language where one is given (multilingual models)."""
    from models.loader import open_model

    model = open_model(args.model)
    language = getattr(args, "target_language", None)
    if language:
        languages = target_languages(model)
        if not languages:
            raise InputError(f"--target-language {language}: {args.model} translates into one language only "
                             f"({model.output_title}); the option is for multilingual models such as M2M100 and NLLB")
        if language not in languages:
            shown = ", ".join(languages[:12]) + (" …" if len(languages) > 12 else "")
            raise InputError(f"--target-language {language}: {args.model} has no such language; it knows {shown}")
        model = model.for_target_language(language)
    return model


def pruned_heads(args: argparse.Namespace, model) -> list:
    """--prune SPEC plus --prune-least-important FRACTION, as one list of heads."""
    pruned = set(parse_heads(args.prune, model))
    if args.prune_least_important:
        from explorer.capture.head_sets import all_heads
        from explorer.analyses.pruning import importance_scores, least_important

        scores = importance_scores(shipped_importance(model), args.normalisation)
        pruned |= set(least_important(scores, args.prune_least_important, all_heads(model)))
    return sorted(pruned)


def shipped_importance(model) -> dict:
    """The model's head_importance.json, or an error saying how to create it."""
    from explorer.analyses.shipped_analyses import IMPORTANCE_FILE, shipped

    report = shipped(model, IMPORTANCE_FILE)
    if report is None:
        raise HeadSpecError(f"{model.path / IMPORTANCE_FILE}: missing; create it with "
                            f"`python -m explorer importance --model {model.path} --src ... --ref ... --json`")
    return report


def run_translate(args: argparse.Namespace) -> None:
    from explorer.capture.inputs import prepare_source, sentence_case
    from explorer.capture.translation import translate

    model = model_for(args)
    if model.task == FILL_MASK:                   # it generates nothing: say so instead of printing empty lines
        raise InputError(f"{args.model}: fills in masked tokens; it does not translate or continue text (use trace to "
                         "see its attention, or the app's Decoding page to fill in a masked word)")
    pruned = pruned_heads(args, model)
    sampling = sampling_from_arguments(args)            # None: greedy or beam search
    for number, text in enumerate(args.text, start=1):   # say what the model will not see, on stderr
        source = prepare_source(text, model)
        if source.truncated:
            print(f"note: sentence {number} is longer than the model's maximum of {model.max_positions} tokens; "
                  "it was cut to fit", file=sys.stderr)
        unknown = model.unknown_characters(text)
        if unknown:
            print(f"note: sentence {number}: the vocabulary has no piece for {' '.join(unknown[:10])} (read as an "
                  "unknown token)", file=sys.stderr)
        recased = None if args.keep_casing else sentence_case(source.text)
        if recased:
            print(f"note: sentence {number} is all capitals or all lower case; fed as “{recased}” "
                  "(--keep-casing feeds it as typed)", file=sys.stderr)
    if sampling is not None:
        from explorer.capture.sampling import sample

        lines = [sample(model, text, sampling, pruned, not args.keep_casing).text for text in args.text]
    else:
        lines = translate(model, args.text, args.beam, pruned, args.length_penalty, not args.keep_casing)
    for line in lines:
        print(line)


def read_corpus(args: argparse.Namespace, model) -> tuple[list[str], list[str] | None]:
    """--src (and --ref, which translation models need and language models do not take), cut to --limit."""
    translates = model.task == TRANSLATE
    if translates and not args.ref:
        raise InputError(f"{args.model} translates: give the references with --ref FILE (aligned with --src)")
    if not translates and args.ref:
        raise InputError(f"{args.model} is a language model: it is scored on --src alone (its loss and "
                         "perplexity); leave out --ref")
    return corpus_examples(file_bytes(args.src), str(args.src), file_bytes(args.ref) if translates else None,
                           str(args.ref), args.limit)


def run_evaluate(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus_scoring import scorer_for
    from explorer.capture.head_sets import format_heads, head_mask
    from explorer.capture.translation import evaluate

    model = model_for(args)
    sources, references = read_corpus(args, model)
    pruned = pruned_heads(args, model)
    started = time.perf_counter()
    with workers_for(args.model, args.workers, args.ray_address) as runner:
        if runner is not None:
            from explorer.analyses.distributed import distributed_evaluate

            bar, progress = progress_bar("evaluate")
            result = distributed_evaluate(runner, model, sources, references, {
                "beam": args.beam, "alpha": args.length_penalty, "fix_casing": not args.keep_casing,
                "pruned": format_heads(pruned), "target_language": model.target_language}, progress)
            bar.close()
            distribution_note(runner, result)
        elif references is None:
            loss = scorer_for(model, sources).loss(head_mask(pruned, model))
            result = {"loss": round(loss, 4), "perplexity": round(math.exp(min(loss, 50.0)), 2),
                      "lines": scorer_for(model, sources).size}
        else:
            result = evaluate(model, sources, references, args.beam, pruned, args.length_penalty,
                              not args.keep_casing)
    result["seconds"] = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps(result))
    elif "perplexity" in result:
        print(f"loss {result['loss']:.4f}  perplexity {result['perplexity']:.2f}  ({result['lines']} lines, "
              f"{result['seconds']:.1f} s)")
    else:
        skipped = f", {result['skipped']} pairs with a blank side left out" if result["skipped"] else ""
        print(f"BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  "
              f"({result['sentences']} sentences{skipped}, {result['seconds']:.1f} s)")


def run_trace(args: argparse.Namespace) -> None:
    from explorer.capture.trace import trace_sentence

    if args.out.suffix not in (".npz", ".json"):
        raise InputError(f"{args.out}: the trace file must end in .npz or .json")
    if not args.out.parent.is_dir():
        raise InputError(f"{args.out.parent}: no such folder for the trace file")
    model = model_for(args)
    trace = trace_sentence(model, args.text, args.beam, pruned_heads(args, model), top_k=args.top_k,
                           alpha=args.length_penalty, fix_casing=not args.keep_casing)
    if args.words:
        from explorer.capture.words import word_trace

        trace = word_trace(trace, model)
    trace.save(args.out)
    print(f"{args.out}: {len(trace.source_tokens)} source and {len(trace.target_tokens)} target positions; "
          f"{trace.output_title.lower()}: {trace.output_text}")


def run_roles(args: argparse.Namespace) -> None:
    from explorer.analyses.roles import analyse_roles, corpus_description
    from explorer.capture.treebank import read_trees

    if not args.text and not args.conllu:
        raise InputError("roles needs --text FILE (plain sentences), --conllu FILE (dependency trees) or both")
    from models.loader import open_model

    checkpoint = open_model(args.model)
    sentences = read_lines(args.text)[: args.limit] if args.text else None
    if args.text and not any(s.strip() for s in sentences):
        raise CorpusError(f"{args.text}: no sentences")
    trees = read_trees(args.conllu, args.limit) if args.conllu else None
    thresholds = Thresholds(args.positional, args.syntactic_margin, args.syntactic_min_count, args.rare_rate,
                            args.rare_over_chance)
    with workers_for(args.model, args.workers, args.ray_address) as runner:
        bar, progress = progress_bar("roles")
        report = analyse_roles(checkpoint, sentences, trees, thresholds, text_name=args.text.name if args.text else "",
                               treebank_name=args.conllu.name if args.conllu else "", progress=progress,
                               tallies_of=tallies_on(runner))
        bar.close()
    if args.json:
        document = report.to_json()
        distribution_note(runner, document)
        print(json.dumps(document, ensure_ascii=False))
        return
    print(f"{'head':<11} {'roles':<30} {'conf':>5} {'offset':>6} {'share':>6} {'rare':>5} {'chance':>6}  syntactic relations")
    for head in report.heads:
        positional = head.get("positional") or {}
        print(f"{head['spec']:<11} {', '.join(head['roles']) or '-':<30} {head['confidence']:5.2f} "
              f"{positional.get('offset', ''):>6} {positional.get('share', ''):>6} "
              f"{head.get('rare_token', {}).get('rate', ''):>5} {head.get('rare_token', {}).get('chance', ''):>6}  "
              f"{', '.join(head.get('syntactic_relations', []))}")
    print(f"{corpus_description(report.to_json())}; {report.seconds:.1f} s")


def run_evolution(args: argparse.Namespace) -> None:
    from explorer.analyses.head_evolution import find_snapshots, head_evolution
    from models.loader import open_model

    checkpoint = open_model(args.model)
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
    from explorer.analyses.corpus_scoring import scorer_for
    from explorer.analyses.importance import importance_report
    from models.loader import open_model
    from explorer.analyses.shipped_analyses import ROLES_FILE, shipped

    checkpoint = open_model(args.model)
    sources, references = read_corpus(args, checkpoint)
    roles = {h["spec"]: h["roles"] for h in (shipped(checkpoint, ROLES_FILE) or {}).get("heads", [])}
    scorer = scorer_for(checkpoint, sources, references)
    with workers_for(args.model, args.workers, args.ray_address) as runner:
        bar, progress = progress_bar("importance")
        engine = engine_for(runner, scorer, sources, references)
        report = importance_report(scorer, with_ablation=not args.gradient_only, corpus_name=args.src.name,
                                   progress=progress, roles=roles, engine=engine)
        bar.close()
        distribution_note(runner, report)
    if args.json:
        print(json.dumps(report))
        return
    metric = report["metric"]
    change = f"{metric.lower()}_change"
    print(f"{'head':<11} {'gradient':>11} {'normalised':>10} {'Δloss':>8} {'Δ' + metric:>11}")
    for head in sorted(report["heads"], key=lambda h: -h["gradient_importance"]):
        print(f"{head['spec']:<11} {head['gradient_importance']:11.4g} {head['gradient_importance_normalised']:10.3f} "
              f"{head.get('loss_change', float('nan')):8.4f} {head.get(change, float('nan')):11.2f}")
    examples = "pairs" if metric == "BLEU" else "lines"
    print(f"{report['corpus']['examples']} {examples} in {report['seconds']:.1f} s "
          f"(gradient pass {report['gradient_seconds']:.1f} s)")


def importance_for_curve(args: argparse.Namespace, checkpoint, scorer, engine=None) -> dict:
    """--importance FILE, else the model's head_importance.json, else gradient importance on this corpus."""
    from explorer.analyses.importance import importance_report
    from explorer.analyses.shipped_analyses import IMPORTANCE_FILE, shipped

    if args.importance:
        try:
            report = json.loads(args.importance.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise InputError(f"{args.importance}: not a readable importance report ({error.__class__.__name__}); "
                             "write one with `python -m explorer importance ... --json`") from None
        if not isinstance(report, dict) or not isinstance(report.get("heads"), list):
            raise InputError(f"{args.importance}: not an importance report (no list of heads)")
        return report
    report = shipped(checkpoint, IMPORTANCE_FILE)
    if report is not None:
        return report
    print(f"note: {args.model} has no {IMPORTANCE_FILE}; pruning in the order of gradient importance on "
          f"{args.src.name} itself (in-sample; --importance FILE gives an order measured elsewhere)", file=sys.stderr)
    return importance_report(scorer, with_ablation=False, corpus_name=args.src.name, engine=engine)


def run_prune_curve(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus_scoring import scorer_for
    from models.loader import open_model
    from explorer.analyses.pruning import CURVE_KINDS, NORMALISATIONS, importance_scores, pruning_curve

    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in CURVE_KINDS]
    if unknown or not kinds:
        raise HeadSpecError(f"--kinds: {', '.join(unknown) or 'nothing'} is not one of {', '.join(CURVE_KINDS)}")
    checkpoint = open_model(args.model)
    sources, references = read_corpus(args, checkpoint)
    scorer = scorer_for(checkpoint, sources, references)
    with workers_for(args.model, args.workers, args.ray_address) as runner:
        engine = engine_for(runner, scorer, sources, references)
        report = importance_for_curve(args, checkpoint, scorer, engine)
        others = {}
        if args.compare_normalisations:
            others = {name: importance_scores(report, name) for name in NORMALISATIONS if name != args.normalisation}
        bar, progress = progress_bar("pruning curve")
        curve = pruning_curve(scorer, importance_scores(report, args.normalisation), kinds, args.steps,
                              max(0, args.seeds), progress, other_orders=others, corpus_name=args.src.name,
                              importance_corpus=report.get("corpus", {}).get("name", ""),
                              measure=args.normalisation, set_scores=engine.set_scores if engine else None)
        bar.close()
        distribution_note(runner, curve)
    if not curve["kinds"]:
        raise HeadSpecError(f"--kinds {args.kinds}: {args.model} has none of these kinds of attention")
    if args.json:
        print(json.dumps(curve))
        return
    for kind, data in curve["kinds"].items():
        other = "".join(f" | {name}" for name in data["other_orders"])
        print(f"{kind} ({plural(data['heads'], 'head')}): fraction pruned → {curve['metric']} by importance "
              f"({args.normalisation}){other} | random mean ± std")
        for i, fraction_pruned in enumerate(data["fractions"]):
            spread = (f"{data['random_mean'][i]:6.2f} ± {data['random_std'][i]:.2f}" if data["random_mean"] else "")
            others_text = "".join(f" | {points[i]:6.2f}" for points in data["other_orders"].values())
            print(f"  {fraction_pruned:4.0%} ({plural(data['pruned'][i], 'head'):>8})  {data['importance'][i]:6.2f}{others_text}"
                  f" | {spread}")
    print(f"{curve['pairs']} {'pairs' if curve['metric'] == 'BLEU' else 'lines'}, {curve['seconds']:.1f} s")


def run_heads(args: argparse.Namespace) -> None:
    from explorer.analyses.head_table import head_table
    from explorer.analyses.shipped_analyses import IMPORTANCE_FILE, ROLES_FILE, shipped

    from models.loader import open_model

    checkpoint = open_model(args.model)
    roles, importance = shipped(checkpoint, ROLES_FILE), shipped(checkpoint, IMPORTANCE_FILE)
    if not roles and not importance:
        raise InputError(f"{args.model}: has no {ROLES_FILE} or {IMPORTANCE_FILE}; compute them with the roles and "
                         "importance commands (scripts/ship_analyses.sh writes both)")
    table = head_table(roles, importance)
    if args.json:
        print(table.to_json(orient="index", force_ascii=False))
    else:
        import pandas as pd

        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
            print(table.to_string(float_format=lambda value: f"{value:.3f}"))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"translate": run_translate, "generate": run_translate, "evaluate": run_evaluate, "trace": run_trace,
                "roles": run_roles,
                "evolution": run_evolution, "heads": run_heads,
                "importance": run_importance, "prune-curve": run_prune_curve}
    handlers.update({"detect": cli_detect.run, "patch": cli_patch.run, "faithfulness": cli_faithfulness.run,
                     "sinks": cli_sinks.run, "replicate": cli_replicate.run})
    try:
        handlers[args.command](args)
    except USER_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        sys.stdout = open(os.devnull, "w")
    return 0
