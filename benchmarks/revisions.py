"""Is this tree as fast as an earlier revision? Greedy decoding, full capture and a whole trace, A/B in one run.

    .venv/bin/python -m benchmarks.revisions --before REVISION [--rounds 60] [--hugging-face FOLDER]

Checks REVISION out into a temporary git worktree, starts one worker process for it and one for this tree
(each loads models/en-de-h8 of its own tree, one torch thread), and asks them in turn, alternating which goes
first, to time a greedy translation of a 20-token sentence, a forward pass with every hook captured and a whole
trace (what a page asks for a new sentence), each through the public calls of its own tree. The
workers never run at the same time, so load on the machine hits both alike. Prints each side's median and the
median of the per-round ratios this ÷ before (p10–p90): ≤ 1 means no slower. With --hugging-face FOLDER (e.g.
the random opus-mt-size Marian that `benchmarks/hugging_face.py --keep DIR` saves), also a captured forward and
greedy decoding of 20 tokens on that model, opened by each tree's own loader.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "A young man in a blue jacket and a black hat is playing the guitar on a busy street corner at night."
MEASURES = ("greedy", "capture", "trace")
HF_MEASURES = ("hf capture", "hf greedy")


def hugging_face_runs(folder: str):
    """(captured forward, greedy 20 tokens) on a Hugging Face folder, through the tree's own loader."""
    import torch

    from explorer.models.hooks import capture, model_run

    try:
        from explorer.models.loader import open_model
        loaded = open_model(folder)
    except ImportError:                                                   # before the one model interface
        from explorer.models.hugging_face import load_hugging_face
        loaded = load_hugging_face(folder)
    ids = torch.randint(10, 6000, (1, 20), generator=torch.Generator().manual_seed(1))
    inputs = {"input_ids": ids, "decoder_input_ids": ids}
    settings = dict(max_new_tokens=20, min_new_tokens=20, num_beams=1, do_sample=False,
                    attention_mask=torch.ones_like(ids))

    def captured() -> None:
        with capture(loaded.hook_names, "*"):
            loaded.model(**inputs)

    def greedy() -> None:
        with model_run(head_mask={}):
            loaded.model.generate(ids, **settings)

    return captured, greedy


def worker(root: str, hugging_face: str = "") -> None:
    """Answer each line on stdin with the seconds of one greedy translation, one captured forward and one trace,
    each through the calls its tree offers (the model interface since 2026-11-23, the checkpoint before)."""
    import torch

    from explorer.capture.trace import trace_sentence
    from explorer.models.checkpoint import load_checkpoint
    from explorer.models.hooks import capture

    torch.set_num_threads(1)
    checkpoint = load_checkpoint(Path(root) / "models" / "en-de-h8")
    model = checkpoint.model
    if hasattr(checkpoint, "generate"):                                   # one interface for every model
        source = checkpoint.encode(SENTENCE).ids
        output = checkpoint.generate([source])[0]
        batches = checkpoint.pad([source]), checkpoint.pad([checkpoint.decoder_input(source, output)[0]])

        def translate() -> None:
            checkpoint.generate([source])

        def captured() -> None:
            checkpoint.run_with_cache(*batches, "*")
    else:
        from explorer.models.decoding import greedy

        src = torch.tensor([checkpoint.tokenizer.encode(SENTENCE).ids])
        tgt = torch.tensor([[2] + greedy(model, src).tokens[0]])

        def translate() -> None:
            greedy(model, src)

        def captured() -> None:
            with torch.no_grad(), capture(model.hook_names, "*"):
                model(src, tgt)

    runs = [translate, captured, lambda: trace_sentence(checkpoint, SENTENCE)]
    if hugging_face:
        runs += hugging_face_runs(hugging_face)
    with torch.inference_mode():
        for _ in sys.stdin:
            seconds = []
            for run in runs:
                started = time.perf_counter()
                for _ in range(3):
                    run()
                seconds.append((time.perf_counter() - started) / 3)
            print(*seconds, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="a git revision, e.g. HEAD~5 or a commit hash")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--hugging-face", default="", metavar="FOLDER", help="also time this Hugging Face model")
    args = parser.parse_args()
    measures = MEASURES + (HF_MEASURES if args.hugging_face else ())
    with tempfile.TemporaryDirectory() as folder:
        before = Path(folder) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(before), args.before], check=True)
        try:
            sides = {"before": before, "this": ROOT}
            workers = {name: subprocess.Popen([sys.executable, __file__, "--worker", str(root), args.hugging_face],
                                              env={**os.environ, "PYTHONPATH": str(root)},
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                       for name, root in sides.items()}
            times = {name: {m: [] for m in measures} for name in sides}
            for round_ in range(args.rounds + 2):
                for name in ("before", "this") if round_ % 2 else ("this", "before"):
                    workers[name].stdin.write("go\n")
                    workers[name].stdin.flush()
                    values = [float(v) for v in workers[name].stdout.readline().split()]
                    if round_ >= 2:                                   # two warm-up rounds
                        for measure, value in zip(measures, values):
                            times[name][measure].append(value)
            for process in workers.values():
                process.stdin.close()
                process.wait()
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
    print(f"{args.rounds} alternating rounds, one torch thread each; this tree ÷ {args.before}")
    for measure in measures:
        ratios = [a / b for a, b in zip(times["this"][measure], times["before"][measure])]
        deciles = statistics.quantiles(ratios, n=10)
        print(f"  {measure:8s} before {statistics.median(times['before'][measure]) * 1e3:6.2f} ms   this "
              f"{statistics.median(times['this'][measure]) * 1e3:6.2f} ms   ratio {statistics.median(ratios):.3f} "
              f"(p10–p90 {deciles[0]:.3f}–{deciles[-1]:.3f})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
    else:
        main()
