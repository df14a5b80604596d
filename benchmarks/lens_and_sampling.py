"""The logit lens and sampling on a bundled model: where the chosen token becomes the top token, layer by layer, on
the screenshots' 20-token sentence and on Multi30k validation captions; how much sampling varies the output; and
how long each Decoding-page view takes on the 20-token sentence (one torch thread, as the app runs).

    .venv/bin/python -m benchmarks.lens_and_sampling [--model en-de-h8] [--captions 100] [--sampled 30] [--runs 7]

(The figures of docs/analyses.md: --captions 200 --sampled 50, ~2.5 minutes on 2 busy cores.)
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import explorer.settings as settings
from explorer.analyses.sentence.logit_lens import logit_lens, mean_settling_layer
from explorer.capture.sampling import sample, step_log_probs, step_sampling
from explorer.capture.trace import trace_sentence
from explorer.capture.translation import bleu
from explorer.figures.logit_lens import logit_lens_figure
from explorer.figures.sampling import sampling_figure
from explorer.models.data import read_lines
from explorer.models.loader import open_model
from explorer.models.sampling import Sampling

ROOT = Path(__file__).resolve().parents[1]

SENTENCE = "A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side."
VALIDATION = settings.MULTI30K


def median_seconds(work, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def lens_summary(lenses: list) -> str:
    """Per layer: the share of steps whose top token is the chosen one and the chosen token's mean probability;
    and the mean settling layer (embeddings = −1)."""
    ranks = np.concatenate([lens.chosen_ranks for lens in lenses], axis=1)
    probs = np.concatenate([lens.chosen_probs for lens in lenses], axis=1)
    settled = [row - 1 for lens in lenses for row in lens.settles_at() if row is not None]
    rows = [f"  {name:<10} top-1 = chosen {np.mean(ranks[r] == 1):6.1%}   mean p(chosen) {probs[r].mean():.3f}   "
            f"median rank {int(np.median(ranks[r]))}" for r, name in enumerate(lenses[0].layers)]
    layers = np.bincount(np.array(settled) + 1, minlength=len(lenses[0].layers))
    spread = ", ".join(f"{name} {count / len(settled):.0%}" for name, count in zip(lenses[0].layers, layers))
    return "\n".join(rows + [f"  settles (top-1 from there on) at layer {np.mean(settled):.2f} on average over "
                             f"{len(settled)} of {ranks.shape[1]} steps; from: {spread}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "en-de-h8"))
    parser.add_argument("--captions", type=int, default=100, help="Multi30k validation captions for the lens")
    parser.add_argument("--sampled", type=int, default=30, help="of them, sampled with each setting")
    parser.add_argument("--runs", type=int, default=7, help="timing runs (median)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = open_model(args.model)
    trace = trace_sentence(model, SENTENCE)
    lens = logit_lens(model, trace)
    layer, settled = mean_settling_layer(lens)
    print(f"{Path(args.model).name}, “{SENTENCE}” ({len(trace.source_tokens)} source tokens, {len(trace.steps)} "
          f"steps): settles at layer {layer:.2f} on average ({settled} steps)")
    print(lens_summary([lens]))
    captions = [line for line in read_lines(VALIDATION / "val.en.gz")[: args.captions] if line.strip()]
    started = time.perf_counter()
    lenses = [logit_lens(model, trace_sentence(model, caption)) for caption in captions]
    print(f"Multi30k val, first {len(captions)} captions ({time.perf_counter() - started:.1f} s):")
    print(lens_summary(lenses))

    sampled = captions[: args.sampled]
    references = read_lines(VALIDATION / "val.de.gz")[: len(sampled)]
    greedy = [trace_sentence(model, caption).output_text for caption in sampled]
    print(f"sampling (seed 0), first {len(sampled)} val captions: BLEU against the references "
          f"(greedy {bleu(greedy, references):.2f}), share of outputs other than greedy:")
    for sampling in (Sampling(0.5), Sampling(1.0), Sampling(1.0, top_p=0.9), Sampling(1.0, top_k=10),
                     Sampling(1.5)):
        texts = [sample(model, caption, sampling).text for caption in sampled]
        print(f"  T {sampling.temperature:g}, top-k {sampling.top_k or 'all'}, top-p {sampling.top_p:g}: BLEU "
              f"{bleu(texts, references):.2f}, {np.mean([t != g for t, g in zip(texts, greedy)]):.0%} differ")
    distinct = {f"T {t:g}": len({sample(model, SENTENCE, Sampling(t, seed=seed)).text for seed in range(20)})
                for t in (0.5, 1.0, 1.5)}
    print(f"20-token sentence, distinct outputs among 20 seeds: {distinct}")

    log_probs = step_log_probs(model, trace)
    timings = {
        "trace (greedy + capture), for reference": lambda: trace_sentence(model, SENTENCE),
        "logit lens + figure": lambda: logit_lens_figure(logit_lens(model, trace)),
        "step log-probabilities (once per sentence)": lambda: step_log_probs(model, trace),
        "one step redrawn after a setting changes": lambda: sampling_figure(
            step_sampling(log_probs[3], Sampling(0.7, 20, 0.9), model), 3),
        "a sample (T 1, new settings)": lambda: sample(model, SENTENCE, Sampling(1.0, seed=1)),
        "a sample (T 1.5, new settings)": lambda: sample(model, SENTENCE, Sampling(1.5, seed=1)),
    }
    print(f"timings on the 20-token sentence, median of {args.runs}:")
    for name, work in timings.items():
        print(f"  {name:<45} {median_seconds(work, args.runs):.3f} s")


if __name__ == "__main__":
    main()
