"""Ablation importance of a bundled model on one process versus Ray workers, in one run.

    .venv/bin/python -m benchmarks.distributed [--model en-de-h8] [--pairs 500] [--workers 2]

Prints the Ray start-up overhead (a local Ray plus workers that have each opened the model), the wall time of
`importance` (gradient pass and one ablation per head: loss and greedy BLEU on the corpus) in this process
(torch's default threads) and on the workers (one thread each), whether the two reports agree, and the cost per
head and per sentence pair, to size a cluster. On a 2-core machine the gain is bounded by the 2 cores: one
process already uses both through torch's threads.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import explorer.settings as settings
from explorer.analyses.corpus.corpus_scoring import scorer_for
from explorer.analyses.corpus.importance import importance_report
from explorer.analyses.jobs.corpus_jobs import ShardedScoring
from explorer.analyses.jobs.distributed import RayRunner
from explorer.analyses.jobs.jobs import OnRay
from explorer.models.checkpoint import load_checkpoint
from explorer.models.data import read_parallel

ROOT = Path(__file__).resolve().parents[1]

MULTI30K = settings.MULTI30K


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "en-de-h8")
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sources, references = read_parallel(MULTI30K / "val.en.gz", MULTI30K / "val.de.gz")
    sources, references = sources[: args.pairs], references[: args.pairs]
    checkpoint = load_checkpoint(args.model)
    scorer = scorer_for(checkpoint, sources, references)
    heads = sum(scorer.model.layers(kind) * scorer.model.heads for kind in scorer.model.kinds)

    started = time.perf_counter()
    alone = importance_report(scorer)
    alone_seconds = time.perf_counter() - started

    started = time.perf_counter()
    runner = RayRunner(str(args.model), args.workers)
    runner.pids()                                     # every worker is up and has opened the model
    startup = time.perf_counter() - started
    engine = ShardedScoring(OnRay(runner, checkpoint), scorer, {"sources": sources, "references": references})
    shared = importance_report(scorer, engine=engine)
    shared_seconds = time.perf_counter() - started
    runner.close()

    differences = {measure: max(abs(a[measure] - b[measure]) for a, b in zip(alone["heads"], shared["heads"]))
                   for measure in ("gradient_importance", "loss_change", "bleu_change")}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads in this process; {args.model.name}, "
          f"{len(sources)} val pairs, {heads} heads (+ the unpruned model)")
    print(f"  one process:              {alone_seconds:7.1f} s")
    print(f"  {args.workers} Ray workers:            {shared_seconds:7.1f} s (start-up {startup:.1f} s of it: a local "
          f"Ray and {args.workers} workers that each opened the model)  speed-up {alone_seconds / shared_seconds:.2f}×")
    print(f"  reports agree: unpruned {alone['unpruned']} vs {shared['unpruned']}; largest difference per head "
          + ", ".join(f"{k} {v:.2g}" for k, v in differences.items()))
    per_head = alone_seconds / (heads + 1)
    print(f"  cost: {per_head:.2f} s per head on one process ({1e3 * per_head / len(sources):.1f} ms per head and "
          f"sentence pair), i.e. ≈ {per_head / len(sources) * 144 * 2000 / 3600:.1f} hours of one process for "
          "opus-mt-en-de's 144 heads on 2,000 pairs at this model's speed (a 74 M model is slower)")


if __name__ == "__main__":
    main()
