"""Seconds per view of issue 22's analyses ("What attention does and does not explain"), each measured in this one run
on the same sentences, model loaded and sentence traced once (what the app caches), one torch thread as the app
runs; median (worst) of --runs. The targets: ≤ 1 s on a 20-token sentence for every view (issue 22), and ≤ 1 s for
faithfulness, patching and flow at 45 words (issue 31). The pages also cache each result per model and sentence,
shared by every session of the server, so a rerun or another visitor gets it at once.

    .venv/bin/python -m benchmarks.explain [--model en-de-h8] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from benchmarks.measured import Measured
from explorer.analyses.sentence.detectors import detect_heads
from explorer.analyses.sentence.faithfulness import faithfulness
from explorer.analyses.sentence.flow import attention_flow
from explorer.analyses.sentence.logit_lens import logit_lens
from explorer.analyses.sentence.patching import patch, suggest_corruption
from explorer.analyses.sentence.sinks import sink_notes, sinks
from explorer.capture.sampling import sample, settings_from, step_log_probs, step_sampling
from explorer.capture.trace import trace_sentence
from explorer.capture.words import word_trace
from explorer.figures.attention import heads_grid
from explorer.figures.detectors import detector_maps, patching_maps
from explorer.figures.logit_lens import logit_lens_figure
from explorer.figures.sampling import sampling_figure
from explorer.models.loader import open_model

ROOT = Path(__file__).resolve().parents[1]

# The screenshots' sentences (scripts/screenshots.py): 5, 20 and 45 words, ~12, 22 and 50 pieces with h8.
SENTENCES = {
    5: "Two dogs play outside.",
    20: "A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side.",
    45: ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
         "old man with a grey hat sits on a wooden bench reading a newspaper under a large green umbrella near "
         "the water."),
}


def timed(work, runs: int) -> tuple[float, float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), max(seconds)


def views(model, text: str) -> dict:
    """What each view computes and draws, as the page does, for one sentence already traced."""
    trace = trace_sentence(model, text)
    corrupt = suggest_corruption(model, text)
    log_probs = step_log_probs(model, trace)
    warm = settings_from(0.8, 0, 0.9, 1)
    kinds = [kind for kind in ("encoder", "decoder") if model.has(kind)]
    found = {
        "word-level trace (every kind)": lambda: word_trace(model, trace),
        "sinks + every-head grid with flags": lambda: heads_grid(trace.pattern(kinds[0]), trace.query_tokens(kinds[0]),
                                                                trace.key_tokens(kinds[0]), "grid",
                                                                flags=sink_notes(model, trace, kinds[0])),
        "sinks table (every kind)": lambda: sinks(model, trace),
        "faithfulness (LOO, grad × input, 4 attention scores)": lambda: faithfulness(model, text),
        "logit lens + figure": lambda: logit_lens_figure(logit_lens(model, trace)),
        "sampling: step redrawn after a setting change": lambda: sampling_figure(step_sampling(log_probs[0], warm, model), 0),
        "sampling: a new sample": lambda: sample(model, text, warm),
        "head detectors + maps (per model, not per sentence)": lambda: [detector_maps(detect_heads(model), kind)
                                                                        for kind in kinds],
    }
    if corrupt:
        found["activation patching + map"] = lambda: patching_maps(patch(model, text, corrupt))
    for kind in kinds:
        found[f"attention flow, {kind}"] = \
            lambda kind=kind: attention_flow(trace.pattern(kind))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "en-de-h8"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = open_model(args.model)
    by_size = {size: views(model, text) for size, text in SENTENCES.items()}
    for work in by_size[5].values():        # first calls (imports, caches) are not what a rerun costs
        work()
    names = list(by_size[20])
    print(f"{args.model}, one torch thread, median (worst) of {args.runs} runs, seconds")
    print(f"{'view':<58} " + " ".join(f"{size:>2} words     " for size in SENTENCES))
    measured = Measured("explain")
    for name in names:
        cells = []
        for size in SENTENCES:
            match = [key for key in by_size[size] if key.split(" (")[0] == name.split(" (")[0]]
            median, worst = timed(by_size[size][match[0]], args.runs) if match else (None, None)
            cells.append(f"{median:.3f} ({worst:.3f})" if match else "—")
            if match and (size == 20 or (size == 45 and name.split(" ")[0] in ("faithfulness", "activation",
                                                                                 "attention"))):
                measured.add(f"{name.split(' (')[0]}, {size} words", median, "s", 1.0)
        print(f"{name:<58} " + " ".join(f"{cell:<15}" for cell in cells), flush=True)
    measured.save()


if __name__ == "__main__":
    main()
