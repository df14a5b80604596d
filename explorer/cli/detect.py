"""`python -m explorer detect`: previous-token, duplicate-token, induction and prefix-matching scores of every
self-attention head (explorer/analyses/sentence/detectors.py; Olsson et al. 2022, TransformerLens's definitions), with chance."""

from __future__ import annotations

import argparse
import json

from explorer.cli.arguments import positive_int, with_json, with_model_path


def add_options(detect: argparse.ArgumentParser) -> None:
    # Defaults are the analysis module's, read when the command runs: building the parser must not import it
    # (every CLI call, --help included, builds it).
    with_model_path(detect)
    detect.add_argument("--seeds", type=positive_int,
                        help="random sequences averaged (default 8)")
    detect.add_argument("--length", type=positive_int,
                        help="random tokens per sequence, repeated once (default 20)")
    detect.add_argument("--top", type=positive_int, default=3, help="heads listed per detector (default %(default)s)")
    with_json(detect, "model", "scores", "chance", "ceiling")


def run(args: argparse.Namespace) -> None:
    from explorer.analyses.sentence.detectors import DETECTOR_TITLES, detect_heads
    from explorer.cli.inputs import opened
    from explorer.models.vocabulary import KIND_TITLES

    defaults = {"seeds": args.seeds, "length": args.length}
    result = detect_heads(opened(args), **{name: value for name, value in defaults.items() if value})
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return
    print(f"{result.model}: {result.seeds} sequences of {result.length} random tokens repeated once "
          f"(TransformerLens's 'mul' score; chance = uniform attention, best = a perfect head)")
    for kind, by_detector in result.scores.items():
        print(f"\n{KIND_TITLES[kind]} ({result.positions[kind]} positions)")
        for name in by_detector:
            top = ", ".join(f"{spec} {score:.3f}" for spec, score in result.top(kind, name, args.top))
            print(f"  {DETECTOR_TITLES[name]:<16} chance {result.chance[kind][name]:.3f}  best "
                  f"{result.ceiling[kind][name]:.3f}  top: {top}")
    for kind, why in result.not_scored.items():
        print(f"\n{KIND_TITLES[kind]}: not scored ({why})")
