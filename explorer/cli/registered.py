"""The command of each registered analysis (explorer/analyses/registry.py): `attention-explorer NAME --model M
--text "…"` on one sentence, or `--src FILE` for the mean over a corpus (the corpus job `registered`, on Ray workers
with --workers), its own options as flags, and --json for exactly one JSON object."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from explorer.analyses.registry import Analysis, Option, registered
from explorer.cli.arguments import positive_int, progress_bar, with_casing, with_json, with_model_path, with_workers
from explorer.cli.parser import Command


def flag(option: Option) -> str:
    return "--" + option.name.replace("_", "-")


def add_option(sub: argparse.ArgumentParser, option: Option) -> None:
    if isinstance(option.default, bool):
        sub.add_argument(flag(option), action="store_true", help=option.help)
    elif option.choices:
        sub.add_argument(flag(option), choices=option.choices, default=option.default,
                         help=f"{option.help} (default %(default)s)")
    else:
        sub.add_argument(flag(option), type=type(option.default), default=option.default,
                         help=f"{option.help} (default %(default)s)")


def command_of(analysis: Analysis) -> Command:
    def add_options(sub: argparse.ArgumentParser) -> None:
        with_model_path(sub)
        source = sub.add_mutually_exclusive_group(required=True)
        source.add_argument("--text", help="the sentence (or text) to analyse")
        source.add_argument("--src", type=Path, help="sentences, one per line (plain or .gz): the mean over them")
        sub.add_argument("--limit", type=positive_int, help="with --src: only the first N sentences")
        with_casing(sub)
        for option in analysis.options:
            add_option(sub, option)
        with_json(sub, "measure", "scores", "sentences")
        with_workers(sub)

    def run(args: argparse.Namespace) -> None:
        record = analysed(analysis, args)
        if args.json:
            print(json.dumps(record.to_json(), ensure_ascii=False))
            return
        print(f"{record.measure}, {args.model}, "
              + (f"the mean over {record.sentences} sentences of {args.src.name}" if args.src else repr(args.text)))
        print(record.table().to_string(float_format="{:.3f}".format, na_rep="pruned"))
        if record.reading:
            print(record.reading)

    return Command(analysis.help, add_options, run)


def analysed(analysis: Analysis, args: argparse.Namespace):
    """The analysis's record for the sentence of --text, or the mean over the sentences of --src."""
    from explorer.analyses.jobs.jobs import run_job
    from explorer.capture.inputs import InputError
    from explorer.capture.trace import trace_sentence
    from explorer.cli.inputs import opened
    from explorer.models.data import CorpusError, read_lines

    if args.limit and not args.src:
        raise InputError(f"--limit {args.limit}: it cuts the corpus of --src; --text is one sentence")
    model = opened(args)
    if not analysis.applies(model):
        raise InputError(f"{args.model}: {analysis.name} does not apply to this model ({analysis.reads})")
    options = {option.name: getattr(args, option.name) for option in analysis.options}
    if args.text is not None:
        return analysis.run(model, trace_sentence(model, args.text, fix_casing=args.recase), **options)
    sentences = [line for line in read_lines(args.src)[: args.limit] if line.strip()]
    if not sentences:
        raise CorpusError(f"{args.src}: no sentences")
    bar, progress = progress_bar(analysis.name)
    options = {"analysis": analysis.name, "fix_casing": args.recase, **options}
    ran = run_job("registered", model, {"sentences": sentences}, options, args.workers, args.ray_address, progress,
                  cache_folder=None)
    bar.close()
    return ran.result


def registered_commands() -> dict[str, Command]:
    return {name: command_of(analysis) for name, analysis in registered().items()}
