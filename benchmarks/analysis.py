"""Speed of the corpus analyses on the 8-head model, on this machine.

    .venv/bin/python -m benchmarks.analysis [--model en-de-h8]

  roles over 1,000 EWT sentences (all three kinds: encoder, and decoder/cross on the model's own translation)
                                                                                   target ≤ 30 s
  gradient importance over 1,000 Multi30k pairs (one forward/backward pass)        target ≤ 30 s
  10-point pruning curve, all heads, 500 sentences, greedy (importance + 3 random orders)  target ≤ 180 s
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import explorer.settings as settings
from benchmarks.measured import Measured
from explorer.analyses.corpus.corpus_scoring import TranslationScorer
from explorer.analyses.corpus.importance import gradient_importance
from explorer.analyses.corpus.pruning import importance_scores, pruning_curve
from explorer.analyses.corpus.roles import analyse_roles
from explorer.analyses.corpus.shipped_analyses import IMPORTANCE_FILE, shipped
from explorer.capture.treebank import read_trees
from explorer.models.checkpoint import load_checkpoint
from explorer.models.data import read_parallel

ROOT = Path(__file__).resolve().parents[1]

DATA = settings.DATA


MEASURED = Measured("analysis")


def report(name: str, seconds: float, target: float, detail: str = "") -> None:
    MEASURED.add(name, seconds, "s", target)
    print(f"{name:<62} {seconds:7.1f} s  target ≤ {target:.0f} s  {'ok' if seconds <= target else 'MISSED'}  {detail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "en-de-h8")
    args = parser.parse_args()
    checkpoint = load_checkpoint(args.model)

    trees = read_trees(DATA / "ud" / "en_ewt-ud-dev.conllu.gz", limit=1000)
    start = time.perf_counter()
    roles = analyse_roles(checkpoint, trees=trees)   # the trees' text for the statistics, their arcs for syntax
    report("roles, 1,000 EWT sentences", time.perf_counter() - start, 30,
           f"({sum(bool(h['roles']) for h in roles.heads)} heads with a role)")

    sources, references = read_parallel(DATA / "multi30k" / "val.en.gz", DATA / "multi30k" / "val.de.gz")
    start = time.perf_counter()
    gradient_importance(TranslationScorer(checkpoint, sources[:1000], references[:1000]))
    report("gradient importance, 1,000 Multi30k pairs", time.perf_counter() - start, 30)

    importance = shipped(checkpoint, IMPORTANCE_FILE)
    if importance is None:
        print(f"no {IMPORTANCE_FILE} in {args.model}: skipping the pruning curve")
        MEASURED.save()
        return
    start = time.perf_counter()
    curve = pruning_curve(TranslationScorer(checkpoint, sources[:500], references[:500]), importance_scores(importance),
                          kinds=("all",), steps=10, seeds=3)
    data = curve["kinds"]["all"]
    report("pruning curve, all heads, 10 points, 500 sentences, 3 seeds", time.perf_counter() - start, 180,
           f"(BLEU {data['importance'][0]} → {data['importance'][-1]})")
    MEASURED.save()


if __name__ == "__main__":
    main()
