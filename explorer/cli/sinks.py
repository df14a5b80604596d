"""`python -m explorer sinks`: every head's share of attention on the first token, special tokens and punctuation,
by weight and by norm, averaged over a corpus (explorer/analyses/sentence/sinks.py), and the heads that are sinks."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import explorer.settings as settings
from explorer.cli.arguments import progress_bar, with_json, with_model_path

DEFAULT_TEXT = settings.CAPTIONS
DEFAULT_LIMIT = 200


def add_options(sinks: argparse.ArgumentParser) -> None:
    # Defaults are the analysis module's, read when the command runs: building the parser must not import it
    # (every CLI call, --help included, builds it).
    with_model_path(sinks)
    sinks.add_argument("--src", type=Path, default=DEFAULT_TEXT,
                       help="sentences, one per line (plain or .gz); default Multi30k val (English)")
    sinks.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                       help="only the first N sentences (default %(default)s; 0: all)")
    sinks.add_argument("--threshold", type=float,
                       help="a sink head puts at least this share of its attention on those tokens, and at least "
                            "twice what uniform attention would (default 0.5)")
    with_json(sinks, "model", "sentences", "threshold", "heads", "sink_heads")


def run(args: argparse.Namespace) -> None:
    import torch

    from explorer.analyses.sentence.sinks import SINK_THRESHOLD, corpus_sinks
    from explorer.capture.inputs import InputError
    from explorer.cli.inputs import opened
    from explorer.models.data import CorpusError, read_lines

    if args.threshold is None:
        args.threshold = SINK_THRESHOLD
    if args.limit < 0 or not 0 < args.threshold <= 1:
        raise InputError(f"--limit {args.limit} --threshold {args.threshold}: the limit must be 0 or more and the "
                         "threshold a share above 0 and at most 1")
    # One torch thread, as the app runs (ATTENTION_EXPLORER_THREADS): on this 2-core machine while busy, 20 sentences
    # took 93.6 s with torch's default of two threads and 2.5 s with one.
    torch.set_num_threads(int(os.environ.get("ATTENTION_EXPLORER_THREADS", "1")))
    model = opened(args)
    sentences = [line for line in read_lines(args.src)[: args.limit or None] if line.strip()]
    if not sentences:
        raise CorpusError(f"{args.src}: no sentences")
    bar, progress = progress_bar("sinks")
    report = corpus_sinks(model, sentences, args.threshold, progress)
    bar.close()
    report["corpus"] = args.src.name
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return
    print(f"{'head':<11} {'weight':>6} {'first':>6} {'special':>7} {'punct':>6} {'norm':>6} {'chance':>6}  "
          "largest sink   sink?")
    for row in report["heads"]:
        print(f"{row['spec']:<11} {row['weight']:6.2f} {row['weight_first']:6.2f} {row['weight_special']:7.2f} "
              f"{row['weight_punctuation']:6.2f} {row['norm']:6.2f} {row['chance']:6.2f}  {row['token']:<14} "
              f"{'sink' if row['sink'] else ''}")
    by_weight, by_norm = report["sink_heads"], report["sink_heads_by_norm"]
    print(f"{len(by_weight)} sink heads by weight (share ≥ {args.threshold} and ≥ twice uniform attention): "
          f"{', '.join(by_weight) or 'none'}; "
          f"by norm: {', '.join(by_norm) or 'none'}. {report['sentences']} sentences of {args.src.name}, "
          f"{report['seconds']:.1f} s")
