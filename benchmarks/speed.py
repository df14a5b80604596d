"""Speed of capture and decoding, measured side by side in one run (ratios, not absolute times, are the point).

    .venv/bin/python -m benchmarks.speed [--model en-de-h8] [--repeats 30]

Prints a table:
  1. forward with every hook point captured ÷ plain forward of the same model            (target ≤ 1.15)
  2. forward with all attention captured ÷ Hugging Face MarianMTModel of identical dimensions,
     random weights, attn_implementation="eager", output_attentions=True                   (target ≤ 1.0)
  3. greedy translation of 20 tokens ÷ MarianMTModel.generate of 20 tokens                   (target ≤ 0.5)
  4. `python -m explorer evaluate` on the 1,000 test sentences, greedy, wall seconds        (target ≤ 30 s)
A and B of each ratio run alternately; the ratio is the median of the ratios of neighbouring A and B calls
(load on the machine hits both of a pair alike), and p10-p90 of those ratios shows how much it wavers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import explorer.settings as settings
from benchmarks.measured import Measured
from explorer.models.checkpoint import load_checkpoint
from explorer.models.decoding import greedy
from explorer.models.hooks import capture
from explorer.models.tokenizer import BOS

ROOT = Path(__file__).resolve().parents[1]

SENTENCE = "A young man in a blue jacket and a black hat is playing the guitar on a busy street corner at night."
TEST = settings.MULTI30K


@dataclass
class Comparison:
    name: str
    ours: float                 # median seconds
    reference: float            # median seconds
    ratios: list[float]         # ours ÷ reference of each neighbouring pair of calls
    target: float

    def row(self) -> str:
        ratio = statistics.median(self.ratios)
        deciles = statistics.quantiles(self.ratios, n=10)
        return (f"{self.name:<70} {self.ours * 1e3:9.2f} {self.reference * 1e3:13.2f} {ratio:7.3f} "
                f"{deciles[0]:6.3f}-{deciles[-1]:.3f} {'≤' + str(self.target):>7} "
                f"{'ok' if ratio <= self.target else 'MISSED'}")


def interleaved(name: str, a, b, repeats: int, target: float) -> Comparison:
    """Time a() and b() alternately after a warm-up of each."""
    for _ in range(3):
        a(), b()
    times_a, times_b = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        a()
        times_a.append(time.perf_counter() - start)
        start = time.perf_counter()
        b()
        times_b.append(time.perf_counter() - start)
    return Comparison(name, statistics.median(times_a), statistics.median(times_b),
                      [x / y for x, y in zip(times_a, times_b)], target)


def marian_twin(config):
    """A MarianMTModel with our dimensions (random weights): the reference implementation to compare with."""
    from transformers import MarianConfig, MarianMTModel

    twin = MarianConfig(vocab_size=config.vocab_size, d_model=config.d_model, encoder_layers=config.encoder_layers,
                        decoder_layers=config.decoder_layers, encoder_attention_heads=config.heads,
                        decoder_attention_heads=config.heads, encoder_ffn_dim=config.d_ff, decoder_ffn_dim=config.d_ff,
                        activation_function="relu", max_position_embeddings=config.max_len, scale_embedding=True,
                        pad_token_id=config.pad_id, eos_token_id=config.eos_id, decoder_start_token_id=config.bos_id,
                        forced_eos_token_id=None)
    return MarianMTModel._from_config(twin, attn_implementation="eager").eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "en-de-h8")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--skip-evaluate", action="store_true")
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    checkpoint = load_checkpoint(args.model)
    model, tokenizer, config = checkpoint.model, checkpoint.tokenizer, checkpoint.model.config
    ids = tokenizer.encode(SENTENCE).ids[:19] + [config.eos_id]
    src = torch.tensor([ids])                                     # 20 source tokens
    tgt = torch.tensor([[BOS] + greedy(model, src, max_steps=19).tokens[0][:19]])
    tgt = torch.cat([tgt, torch.full((1, 20 - tgt.shape[1]), 5)], 1) if tgt.shape[1] < 20 else tgt  # 20 target tokens
    marian = marian_twin(config)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; model {args.model.name}; "
          f"20 source and {tgt.shape[1]} target tokens; median of {args.repeats}\n")
    rows = []

    def plain():
        model(src, tgt)

    def everything():
        with capture(model.hook_names, "*"):
            model(src, tgt)

    def attention_only():
        with capture(model.hook_names, "*.pattern"):
            model(src, tgt)

    def marian_attention():
        marian(input_ids=src, decoder_input_ids=tgt, output_attentions=True)

    rows.append(interleaved("forward, every hook captured ÷ plain forward", everything, plain, args.repeats, 1.15))
    rows.append(interleaved("forward, all attention captured ÷ Marian eager output_attentions", attention_only,
                            marian_attention, args.repeats, 1.0))

    def ours_greedy():
        result = greedy(model, src, max_steps=20)
        assert len(result.tokens[0]) == 20 or len(result.tokens[0]) < 20  # EOS may come earlier: see steps column

    steps = len(greedy(model, src, max_steps=20).tokens[0]) + 1

    def marian_generate():
        marian.generate(input_ids=src, max_new_tokens=steps, min_new_tokens=steps, do_sample=False, num_beams=1)

    rows.append(interleaved(f"greedy translation ({steps} steps) ÷ Marian generate ({steps} tokens)", ours_greedy,
                            marian_generate, args.repeats, 0.5))

    print(f"{'measure':<70} {'ours ms':>9} {'reference ms':>13} {'ratio':>7} {'p10-p90':>11} {'target':>7}")
    measured = Measured("speed")
    for row in rows:
        print(row.row())
        measured.add(row.name, statistics.median(row.ratios), "×", row.target)

    if not args.skip_evaluate:
        command = [sys.executable, "-m", "explorer", "evaluate", "--model", str(args.model), "--json",
                   "--src", str(TEST / "test_2016_flickr.en.gz"), "--ref", str(TEST / "test_2016_flickr.de.gz")]
        start = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
        value = json.loads(result.stdout)
        print(f"\nevaluate, 1,000 test sentences, greedy: {wall:.1f} s wall (process start included; "
              f"{value['seconds']:.1f} s translating and scoring), BLEU {value['bleu']}  target ≤ 30 s "
              f"{'ok' if wall <= 30 else 'MISSED'}")
        measured.add("`explorer evaluate`, 1,000 test sentences, greedy, process start included", wall, "s", 30)
    measured.save()


if __name__ == "__main__":
    main()
