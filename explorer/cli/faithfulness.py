"""`python -m explorer faithfulness`: how well attention-derived token scores rank the tokens the output depends on,
averaged over a corpus (explorer/analyses/sentence/faithfulness.py); on Ray with --workers N or --ray-address, as
additive per-shard sums of Spearman's ρ and counts, so one process and many workers give the same means."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from explorer.cli.arguments import distribution_note, positive_int, progress_bar, with_json, with_model_path, with_workers


def add_options(sub: argparse.ArgumentParser) -> None:
    with_model_path(sub)
    sub.add_argument("--src", required=True, type=Path, help="source sentences (prompts), one per line (plain or .gz)")
    sub.add_argument("--limit", type=positive_int, help="only the first N lines")
    with_json(sub, "sentences", "skipped", "methods", "seconds")
    with_workers(sub)


def run(args: argparse.Namespace) -> None:
    from explorer.analyses.jobs.jobs import run_job
    from explorer.analyses.sentence.faithfulness import METHOD_TITLES
    from explorer.cli.inputs import opened
    from explorer.models.data import CorpusError, read_lines

    model = opened(args)
    sentences = [line for line in read_lines(args.src)[: args.limit] if line.strip()]
    if not sentences:
        raise CorpusError(f"{args.src}: no sentences")
    started = time.perf_counter()
    bar, progress = progress_bar("faithfulness")
    ran = run_job("faithfulness", model, {"sentences": sentences}, {}, args.workers, args.ray_address, progress,
                  cache_folder=None)
    bar.close()
    result = ran.result
    document = dict(result.to_json(), seconds=round(time.perf_counter() - started, 2))
    distribution_note(ran.distributed, document)
    if args.json:
        print(json.dumps(document, ensure_ascii=False))
        return
    print(f"{'method':<22} {'ρ with leave-one-out':>21} {'ρ with gradient × input':>24} {'sentences':>9}")
    for method, entry in result.methods.items():
        gradient = entry.spearman_gradient_x_input
        print(f"{METHOD_TITLES[method]:<22} {entry.spearman:21.3f} "
              f"{'' if gradient is None else f'{gradient:.3f}':>24} {entry.sentences:9d}")
    print(f"{result.sentences} sentences scored, {sum(result.skipped.values())} skipped, {document['seconds']:.1f} s")
