"""Which score tells in-domain sentences from the rest? Multi30k test_2016_flickr (in: image captions) against
UD English EWT dev (out: web text), for a bundled model's training-corpus piece frequencies.

    .venv/bin/python -m benchmarks.domain [--model en-de-h8]

Prints, per score, the ROC AUC (1.0: perfect separation, 0.5: chance) and, at the shipped thresholds, the share
of in-domain sentences flagged (false alarms) and of out-of-domain ones flagged (caught).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import explorer.capture.domain as domain
import explorer.settings as settings
from explorer.capture.treebank import read_trees
from explorer.models.checkpoint import load_checkpoint
from explorer.models.data import read_lines

ROOT = Path(__file__).resolve().parents[1]

DATA = settings.DATA


def auc(inside: np.ndarray, outside: np.ndarray) -> float:
    """P(score of a random out-of-domain sentence > score of a random in-domain one), ties counting half."""
    greater = (outside[:, None] > inside[None, :]).mean()
    ties = (outside[:, None] == inside[None, :]).mean()
    return float(greater + ties / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "en-de-h8")
    args = parser.parse_args()
    checkpoint = load_checkpoint(args.model)
    inside = [s for s in read_lines(DATA / "multi30k" / "test_2016_flickr.en.gz") if s.strip()]
    outside = [t.text for t in read_trees(DATA / "ud" / "en_ewt-ud-dev.conllu.gz")]
    outside = [s for s in outside if len(s.split()) >= 3]          # headlines and one-word lines say little
    print(f"{checkpoint.name}: {len(inside)} Multi30k test captions (in) vs {len(outside)} EWT dev sentences (out)")
    for rare_count in (1, 5, 20):
        domain.RARE_COUNT = rare_count
        scores = {name: [domain.familiarity(s, checkpoint) for s in texts] for name, texts in (("in", inside), ("out", outside))}
        share = {k: np.array([f.unfamiliar_share for f in v]) for k, v in scores.items()}
        print(f"  unfamiliar-word share (rarest piece < {rare_count:>2} in training): AUC {auc(share['in'], share['out']):.3f}"
              + "".join(f"; ≥ {t:.0%}: flags {np.mean(share['in'] >= t):.1%} in, {np.mean(share['out'] >= t):.1%} out"
                        for t in (0.1, 0.2, 0.3)))
    perplexity = {k: np.array([f.log_perplexity for f in v]) for k, v in scores.items()}
    print(f"  piece unigram log-perplexity (training frequencies):          AUC {auc(perplexity['in'], perplexity['out']):.3f}")
    for quantile in (90, 95, 99):
        threshold = np.percentile(perplexity["in"], quantile)
        print(f"    threshold {threshold:.2f} (in-domain {quantile}th percentile): flags "
              f"{np.mean(perplexity['in'] >= threshold):.1%} in, {np.mean(perplexity['out'] >= threshold):.1%} out")
    entropy = domain.familiarity(inside[0], checkpoint).entropy
    threshold = entropy + domain.OUT_OF_DOMAIN_MARGIN
    print(f"    shipped threshold: unigram entropy {entropy:.2f} + {domain.OUT_OF_DOMAIN_MARGIN} = {threshold:.2f}: "
          f"flags {np.mean(perplexity['in'] >= threshold):.1%} in, {np.mean(perplexity['out'] >= threshold):.1%} out")


if __name__ == "__main__":
    main()
