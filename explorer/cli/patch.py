"""`python -m explorer patch`: activation patching (causal tracing, Meng et al. 2022) of a clean and a corrupted
sentence: how much of the clean output each head's z and each layer's output restores (explorer/analyses/sentence/patching.py)."""

from __future__ import annotations

import argparse
import json

import numpy as np

from explorer.cli.arguments import with_casing, with_json, with_model_path


def add_options(patch: argparse.ArgumentParser) -> None:
    # The metrics are the analysis module's (it checks them), read when the command runs: building the parser must not import it
    # (every CLI call, --help included, builds it).
    with_model_path(patch)
    patch.add_argument("--clean", required=True, help="the sentence whose output is the target")
    patch.add_argument("--corrupt", required=True, help="the same sentence with a word changed (as many pieces)")
    patch.add_argument("--metric", default="total", metavar="{total,first}",
                       help="log-probability of the whole clean output (total, the default) or of its first token")
    with_casing(patch)
    with_json(patch, "clean", "corrupt", "heads", "layer_outputs", "lp_clean", "lp_corrupt")


def run(args: argparse.Namespace) -> None:
    from explorer.analyses.sentence.patching import patch
    from explorer.cli.inputs import opened
    from explorer.models.vocabulary import KIND_TITLES

    result = patch(opened(args), args.clean, args.corrupt, args.metric, fix_casing=args.recase)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return
    print(f"clean:     {result.clean}\n  output:  {result.clean_output}\n  log-prob {result.lp_clean:.3f}")
    print(f"corrupted: {result.corrupt}\n  output:  {result.corrupt_output}\n  log-prob of the clean output "
          f"{result.lp_corrupt:.3f}")
    print(f"read at {result.read_at}; restored = (lp_patched − lp_corrupt) / (lp_clean − lp_corrupt)")
    if result.nothing_to_restore:
        print("The clean and corrupted runs give the clean output the same log-probability: nothing to restore.")
        return
    # rounded first, so that a rounding error of −1e−7 reads 0.000, not −0.000 (−0.0 + 0.0 is 0.0)
    print(f"checks: every layer's output patched {round(result.all_layers, 3) + 0.0:.3f}, nothing patched "
          f"{round(result.nothing, 3) + 0.0:.3f}")
    for stack, values in result.layer_outputs.items():
        print(f"{stack} layer outputs: " + "  ".join(f"{layer}: {value:.3f}" for layer, value in enumerate(values)))
    for kind, values in result.heads.items():
        print(f"\n{KIND_TITLES[kind]}, heads' z (rows: layers)")
        for layer, row in enumerate(values):
            print(f"  {layer}: " + " ".join(f"{value:+.3f}" for value in row))
        best = np.unravel_index(np.nanargmax(values), values.shape)
        print(f"  most restoring: layer {best[0]} head {best[1]}, {values[best]:.3f}")
