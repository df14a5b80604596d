"""`python -m explorer atlas` and `search-heads`: the head atlas (explorer/atlas_studies.py) on the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from explorer.cli.arguments import (
    distribution_note,
    positive_int,
    progress_bar,
    with_json,
    with_model_path,
    with_workers,
)

ATLAS_HELP = ("the head atlas: every head of a stack on one map, by the Jensen–Shannon distance between their "
              "attention over a corpus (Clark et al. 2019 §6)")
SEARCH_HELP = ("search heads by behaviour: every head ranked by the share of attention from queries matching one "
               "pattern to keys matching another, with a 95%% interval")


def corpus_options(sub: argparse.ArgumentParser) -> None:
    with_model_path(sub)
    sub.add_argument("--text", type=Path, help="sentences, one per line (plain or .gz); default: the project's "
                                               "captions (Multi30k validation English)")
    sub.add_argument("--limit", type=positive_int, help="only the first N sentences (default 200 of the captions)")
    sub.add_argument("--kind", choices=("encoder", "decoder", "cross"),
                     help="the attention stack (default: the model's first, the encoder of a translator)")
    with_workers(sub)


def atlas_options(sub: argparse.ArgumentParser) -> None:
    corpus_options(sub)
    with_json(sub, "model", "kind", "sentences", "queries", "heads", "distance")


def search_options(sub: argparse.ArgumentParser) -> None:
    corpus_options(sub)
    sub.add_argument("--conllu", type=Path, help="a treebank (CoNLL-U, plain or .gz) read by words instead of "
                                                 "--text, for the grammar's patterns (e.g. "
                                                 "explorer/data/ud/en_ewt-ud-dev.conllu.gz)")
    sub.add_argument("--query", default="any", help="queries counted: any (default) or word:X; with --conllu also "
                                                    "pos:X (NOUN, ADJ …) or deprel:X (nsubj, det …)")
    sub.add_argument("--key", default="previous",
                     help="keys counted, for each query: previous (default), next, self, same (the same piece "
                          "earlier), first, special, word:X or any; with --conllu also head (the query word's "
                          "syntactic head), dependent, pos:X, deprel:X")
    sub.add_argument("--top", type=positive_int, default=10, help="heads printed (default %(default)s)")
    with_json(sub, "model", "kind", "query", "key", "sentences", "queries", "chance", "heads", "examples")


def finished(args: argparse.Namespace, name: str, start):
    """Run start(model, progress) under a progress bar; with --json print the record (and how Ray spread it) and
    return None, else return the record to print as text."""
    from explorer.cli.inputs import opened

    model = opened(args)
    bar, progress = progress_bar(name)
    with bar:
        ran = start(model, progress)
    if not args.json:
        return ran.result
    document = ran.result.to_json()
    distribution_note(ran.distributed, document)
    print(json.dumps(document, ensure_ascii=False))
    return None


def run_atlas(args: argparse.Namespace) -> None:
    from explorer.atlas_studies import atlas_job

    result = finished(args, "atlas", lambda model, progress: atlas_job(model, args.text, args.limit, args.kind,
                                                                        args.workers, args.ray_address, progress))
    if result is None:
        return
    print(f"{result.model}, {result.kind} attention: {len(result.heads)} heads over {result.sentences} sentences "
          f"({result.queries} queries); distance in {result.unit}")
    print(result.table().round(3).to_string())


def run_search(args: argparse.Namespace) -> None:
    from explorer.atlas_studies import search_job

    result = finished(args, "search-heads", lambda model, progress: search_job(
        model, args.text, args.query, args.key, args.limit, args.kind, args.workers, args.ray_address, progress,
        args.conllu))
    if result is None:
        return
    print(f"{result.model}, {result.kind} attention: from {result.query} queries to {result.key} keys over "
          f"{result.sentences} sentences ({result.queries} queries); uniform attention would give {result.chance:.3f}")
    print(result.table().head(args.top).round(3).to_string())
    for example in result.examples[:3]:
        print(f"  {example.head} {example.share:.0%}: {example.token!r} (position {example.query}) → "
              f"{example.top_key!r} in “{example.sentence}”")
