"""The commands about one text or a corpus of them: translate (and generate), evaluate, trace. Imported when one of
them runs, so that `python -m explorer --help` loads no model code."""

from __future__ import annotations

import argparse
import json
import sys
import time

from explorer.capture.input_kinds import IMAGE, input_kind
from explorer.capture.inputs import InputError
from explorer.capture.sampling_options import sampling_from_arguments
from explorer.cli.arguments import distribution_note, progress_bar
from explorer.cli.inputs import model_for, pruned_heads, read_corpus
from explorer.models.interface import FillsMask, Generates


def shortened(text: str, chars: int = 80) -> str:
    """A person's long text quoted in a note: its start, and how long it is (a 6,000-character paste was echoed)."""
    return text if len(text) <= chars else f"{text[:chars]}… ({len(text):,} characters)"


def run_translate(args: argparse.Namespace) -> None:
    from explorer.capture.inputs import prepare_source, sentence_case
    from explorer.capture.translation import translate

    model = model_for(args)
    if not isinstance(model, Generates):          # it writes nothing: say so instead of printing empty lines
        raise InputError(f"{args.model}: {model.gives}; it does not translate or continue text (use trace to see "
                         "its attention)")
    pruned = pruned_heads(args, model)
    sampling = sampling_from_arguments(args)            # None: greedy or beam search
    for number, text in enumerate(args.text, start=1):   # say what the model will not see, on stderr
        try:
            source = prepare_source(text, model)
        except InputError as error:         # which of the sentences it was
            raise InputError(f"sentence {number} of {len(args.text)}: {error}") from None
        if source.truncated:
            print(f"note: sentence {number} is longer than the model's maximum of {model.max_positions} tokens; "
                  "it was cut to fit", file=sys.stderr)
        unknown = model.unknown_characters(text)
        if unknown:
            print(f"note: sentence {number}: the vocabulary has no piece for {' '.join(unknown[:10])} (read as an "
                  "unknown token)", file=sys.stderr)
        recased = sentence_case(source.text) if args.recase else None
        if recased:
            print(f"note: sentence {number} is all capitals or all lower case; fed as “{shortened(recased)}” "
                  "(--recase)", file=sys.stderr)
    if sampling is not None:
        from explorer.capture.sampling import sample

        lines = [sample(model, text, sampling, pruned, args.recase).text for text in args.text]
    else:
        lines = translate(model, args.text, args.beam, pruned, args.length_penalty, args.recase)
    for line in lines:
        print(line)

def run_evaluate(args: argparse.Namespace) -> None:
    from explorer.analyses.corpus.results import TextScores
    from explorer.analyses.jobs.jobs import run_job
    from explorer.capture.head_sets import format_heads

    model = model_for(args)
    sources, references = read_corpus(args, model)
    pruned = pruned_heads(args, model)
    started = time.perf_counter()
    bar, progress = progress_bar("evaluate")
    ran = run_job("evaluate", model, {"sources": sources, "references": references},
                  {"beam": args.beam, "alpha": args.length_penalty, "fix_casing": args.recase,
                   "pruned": format_heads(pruned)}, args.workers, args.ray_address, progress, cache_folder=None)
    bar.close()
    scores, result = ran.result, ran.result.to_json()
    distribution_note(ran.distributed, result)
    result["seconds"] = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps(result))
    elif isinstance(scores, TextScores):
        name, value = scores.quality
        print(f"loss {scores.loss:.4f}  {name} {value:.4g}  ({scores.lines} lines, "
              f"{result['seconds']:.1f} s)")
    else:
        skipped = f", {scores.skipped} pairs with a blank side left out" if scores.skipped else ""
        print(f"BLEU {scores.bleu:.2f}  chrF {scores.chrf:.2f}  "
              f"({scores.sentences} sentences{skipped}, {result['seconds']:.1f} s)")

def run_trace(args: argparse.Namespace) -> None:
    from explorer.capture.trace import trace_sentence

    if args.out.suffix not in (".npz", ".json"):
        raise InputError(f"{args.out}: the trace file must end in .npz or .json")
    if not args.out.parent.is_dir():
        raise InputError(f"{args.out.parent}: no such folder for the trace file")
    model = model_for(args)
    if args.image is not None or input_kind(model) is IMAGE:
        trace_an_image(args, model)
        return
    trace = trace_sentence(model, args.text, args.beam, pruned_heads(args, model), top_k=args.top_k,
                           alpha=args.length_penalty, fix_casing=args.recase)
    if args.words:
        from explorer.capture.words import word_trace

        trace = word_trace(model, trace)
    trace.save(args.out)
    if trace.recased_from:
        print(f"note: the text is all capitals or all lower case; fed as “{shortened(trace.text)}” (--recase)",
              file=sys.stderr)
    if trace.truncated:
        print(f"note: the text is longer than the model's maximum of {model.max_positions} tokens; it was cut to "
              "fit", file=sys.stderr)
    output = trace.output_text
    if isinstance(model, FillsMask) and not output:     # it printed "predictions for [mask]:" and nothing more
        output = f"none: the text has no {model.pieces([model.mask_id])[0]} to fill in; put one where a word goes"
    print(f"{args.out}: {len(trace.source_tokens)} source and {len(trace.target_tokens)} target positions; "
          f"{trace.output_title.lower()}: {output}")


def trace_an_image(args: argparse.Namespace, model) -> None:
    """trace --image: the image's attention over its patches, and the class the model gives it."""
    from explorer.capture.image_inputs import read_image
    from explorer.capture.image_trace import trace_image

    if input_kind(model) is not IMAGE:
        raise InputError(f"--image: {args.model} reads {input_kind(model).reads}; give it {input_kind(model).what} "
                         f"with --{input_kind(model).name}")
    if args.image is None:
        raise InputError(f"{args.model} reads images; give one with --image (e.g. --image digits:17)")
    pixels, description = read_image(args.image, model)
    trace = trace_image(model, pixels, pruned_heads(args, model), top_k=args.top_k, description=description)
    trace.save(args.out)
    best = trace.steps[0]
    print(f"{args.out}: {description}: {len(trace.source_tokens)} tokens (the class token and "
          f"{model.grid[0]}×{model.grid[1]} patches); class {trace.output_text} ({best.chosen_prob:.1%})")
