"""`python -m explorer focus`: the lecture's question ("which word does “it” look at?") for every layer and head of
one attention kind, at word level (explorer/analyses/sentence/focus_table.py)."""

from __future__ import annotations

import argparse
import json
import sys

from explorer.cli.arguments import positive_int, with_casing, with_json, with_model_path

HELP = ("for every head, the word a chosen word gives the most weight, and that weight (over words: the sum of a "
        "word's pieces, the mean over the chosen word's pieces; special tokens and punctuation included)")


def add_options(focus: argparse.ArgumentParser) -> None:
    with_model_path(focus)
    focus.add_argument("--text", required=True, help="the sentence (a decoder-only model's prompt)")
    focus.add_argument("--word", required=True,
                       help="the word whose attention to read, case-insensitive, e.g. it (the first occurrence "
                            "unless --occurrence says otherwise)")
    focus.add_argument("--occurrence", type=positive_int, default=1, metavar="N",
                       help="the N-th occurrence of the word (default 1)")
    focus.add_argument("--kind", choices=("encoder", "decoder", "cross"),
                       help="the attention kind (default: the one that reads the sentence: encoder self-attention, "
                            "or a decoder-only model's decoder); for a translation model's decoder and cross "
                            "attention the word is looked up in its output")
    with_casing(focus)
    with_json(focus, "model", "sentence", "word", "position", "occurrence", "occurrences", "kind", "heads",
              "top_word_counts")


def run(args: argparse.Namespace) -> None:
    from explorer.analyses.sentence.focus_table import word_focus_table
    from explorer.capture.trace import trace_sentence
    from explorer.cli.inputs import opened

    model = opened(args)
    trace = trace_sentence(model, args.text, fix_casing=args.recase)
    table = word_focus_table(model, trace, args.word, args.kind, args.occurrence)
    if table.occurrences > 1:       # said on stderr, so that stdout stays one line per head (or one JSON object)
        print(f"note: “{table.word}” occurs {table.occurrences} times; occurrence {table.occurrence} (word "
              f"{table.position}) is read (--occurrence N picks another)", file=sys.stderr)
    if args.json:
        print(json.dumps({"model": model.name, **table.to_json()}, ensure_ascii=False))
        return
    width = max(len(row.spec) for row in table.heads)
    word_width = max(len(row.top_word) for row in table.heads)
    for row in table.heads:
        print(f"{row.spec:<{width}}  {row.top_word:<{word_width}}  {100 * row.weight:5.1f}%")
    total = len(table.heads)
    print("; ".join(f"{word}: {count} of {total} heads" for word, count in table.counts().items()))
