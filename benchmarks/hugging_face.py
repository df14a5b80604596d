"""Hugging Face models at real sizes (random weights): the explorer's capture and decoding against transformers'
own eager model, memory of a loaded model, and the Attention page in a real browser.

    .venv/bin/python -m benchmarks.hugging_face [--repeats 10] [--families marian,bert,gpt2] [--no-browser]

Per family, at the dimensions of Helsinki-NLP/opus-mt-en-de (Marian: d 512, 6+6 layers, 8 heads, FFN 2048,
vocab 58,101), bert-base-uncased (d 768, 12 layers, 12 heads, vocab 30,522) and gpt2 (d 768, 12 layers,
12 heads, vocab 50,257), on a 20-token input:
  1. the explorer's capture of every hook point ÷ transformers' eager forward with output_attentions=True
     (the same weights, loaded a second time with attn_implementation="eager")              (target ≤ 1.15)
  2. the explorer's greedy decoding of 20 tokens (generate through the explorer's attention function, inside
     a model_run) ÷ the eager model's generate of 20 tokens                                 (target ≤ 1.1)
  3. resident memory a loaded model adds (open_model and one forward pass, in a fresh process that has
     already imported the family's code) ÷ its parameters' bytes
                                                                                            (target ≤ 1.3)
Then, for the Marian model (saved with a SentencePiece tokenizer trained on Multi30k, padded to the vocab
size), the Attention page in Chromium: a new 20-token sentence → every figure drawn (target ≤ 3 s) and a
sentence seen before (target ≤ 0.5 s). Ratios are medians of neighbouring A/B pairs, as in speed.py.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import explorer.settings as settings
from benchmarks.speed import interleaved

MULTI30K = settings.MULTI30K


def configs():
    import transformers

    return {
        "marian": transformers.MarianConfig(
            vocab_size=58101, decoder_vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
            encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
            max_position_embeddings=512, scale_embedding=True, pad_token_id=58100, eos_token_id=0,
            decoder_start_token_id=58100, forced_eos_token_id=0, activation_function="swish"),
        "bert": transformers.BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                                        num_attention_heads=12, intermediate_size=3072),
        "gpt2": transformers.GPT2Config(vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_positions=1024),
    }


CLASSES = {"marian": "MarianMTModel", "bert": "BertForMaskedLM", "gpt2": "GPT2LMHeadModel"}


def marian_tokenizer(folder: Path, vocab_size: int) -> None:
    """A SentencePiece model trained on Multi30k's English, its pieces first in a vocab of the model's size."""
    import sentencepiece as spm
    import transformers

    text = folder / "train.txt"
    with gzip.open(MULTI30K / "train.en.gz", "rt", encoding="utf-8") as lines:
        text.write_text("".join(lines), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "spm"), vocab_size=6000,
                                   bos_id=-1, eos_id=-1, unk_id=0, minloglevel=2)
    processor = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    pieces = [processor.id_to_piece(i) for i in range(1, processor.get_piece_size())]
    vocab = {"</s>": 0, "<unk>": 1, **{p: i + 2 for i, p in enumerate(pieces)}}
    vocab.update({f"<filler{i}>": i for i in range(len(vocab), vocab_size - 1)})
    vocab["<pad>"] = vocab_size - 1
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    transformers.MarianTokenizer(source_spm=str(folder / "spm.model"), target_spm=str(folder / "spm.model"),
                                 vocab=str(folder / "vocab.json")).save_pretrained(folder)
    text.unlink()


def save_random(family: str, folder: Path) -> None:
    import transformers

    torch.manual_seed(0)
    model = getattr(transformers, CLASSES[family])(configs()[family])
    model.save_pretrained(folder)
    if family == "marian":
        marian_tokenizer(folder, configs()[family].vocab_size)
    else:   # the explorer opens a model with its tokenizer; the benchmark feeds random ids, so a small one will do
        from tests import hugging_face_models

        getattr(hugging_face_models, family)(folder)[1].save_pretrained(folder)


MEMORY = """
import resource, sys, gc
import torch, transformers
from explorer.models.loader import FAMILIES, open_model
import json
# The family's code is imported before the baseline: what is measured is the model, not transformers' modules.
family = json.load(open({folder!r} + "/config.json"))["model_type"]
getattr(transformers, FAMILIES[family][0])
def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS"))
before = rss()
loaded = open_model({folder!r})
ids = torch.randint(10, 6000, (1, 20))
inputs = dict(input_ids=ids, decoder_input_ids=ids) if "cross" in loaded.kinds else dict(input_ids=ids)
with torch.no_grad():            # one forward pass, so every weight page has been read (safetensors maps lazily)
    loaded.model(**inputs)
gc.collect()
after = rss()
params = sum(p.numel() * p.element_size() for p in loaded.model.parameters())
print(after - before, params, sum(p.numel() for p in loaded.model.parameters()))
"""


def memory(folder: Path) -> tuple[int, int, int]:
    output = subprocess.run([sys.executable, "-c", MEMORY.format(folder=str(folder))],
                            capture_output=True, text=True, check=True).stdout.split()
    return tuple(int(x) for x in output)


def compare(family: str, folder: Path, repeats: int) -> list:
    import transformers

    from explorer.models.hooks import capture, model_run
    from explorer.models.loader import open_model

    ours = open_model(folder)
    eager = getattr(transformers, CLASSES[family]).from_pretrained(folder, attn_implementation="eager").eval()
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(10, 6000, (1, 20), generator=generator)
    inputs = {"input_ids": ids}
    if family == "marian":
        inputs["decoder_input_ids"] = torch.randint(10, 6000, (1, 20), generator=generator)
    rows = []

    def capture_all():
        with capture(ours.hook_names, "*"):
            ours.model(**inputs)

    def eager_attentions():
        eager(**inputs, output_attentions=True)

    with torch.no_grad():
        rows.append(interleaved(f"{family}: capture every hook point ÷ eager output_attentions", capture_all,
                                eager_attentions, repeats, 1.15))
        if family != "bert":
            settings = dict(max_new_tokens=20, min_new_tokens=20, num_beams=1, do_sample=False,
                            attention_mask=torch.ones_like(ids), pad_token_id=ours.model.config.eos_token_id)

            def our_greedy():
                with model_run(head_mask={}):
                    ours.model.generate(ids, **settings)

            def eager_greedy():
                eager.generate(ids, **settings)

            rows.append(interleaved(f"{family}: greedy, 20 new tokens ÷ eager generate", our_greedy, eager_greedy,
                                    max(3, repeats // 2), 1.1))
    return rows


def browser_times(folder: Path, rounds: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    from benchmarks.browser import MARKERS, SENTENCES, time_submit
    from tests.browser.harness import go_to, launch, offline_context, streamlit_server, wait_idle

    with tempfile.TemporaryDirectory() as logs, streamlit_server(Path(logs) / "server.log") as url, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        page = offline_context(browser).new_page()
        page.goto(f"{url}/attention?model={folder}")
        page.get_by_label("English sentence").wait_for(timeout=120_000)
        wait_idle(page)
        go_to(page, "Attention")
        time_submit(page, SENTENCES[0], MARKERS[0])           # the model loads and warms up
        cold, cached = [], []
        for i in range(1, rounds + 1):
            cold.append(time_submit(page, SENTENCES[i], MARKERS[i]))
            cached.append(time_submit(page, SENTENCES[i - 1], MARKERS[i - 1]))
            time_submit(page, SENTENCES[i], MARKERS[i])
        browser.close()
    return cold, cached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--families", default="marian,bert,gpt2")
    parser.add_argument("--rounds", type=int, default=4, help="browser rounds (new + cached sentence each)")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--keep", type=Path, help="save the random models under this folder (and reuse them)")
    args = parser.parse_args()
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        rows, memories = [], {}
        for family in args.families.split(","):
            folder = base / f"random-{family}"
            if not (folder / "config.json").is_file():
                folder.mkdir(parents=True, exist_ok=True)
                save_random(family, folder)
            memories[family] = memory(folder)
            rows += compare(family, folder, args.repeats)
        print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.get_num_threads()} "
              f"threads; 20-token inputs; random weights\n")
        print(f"{'':<70} {'ours ms':>9} {'reference ms':>13} {'ratio':>7} {'p10-p90':>13} {'target':>7}")
        for row in rows:
            print(row.row())
        print()
        for family, (added, params, count) in memories.items():
            ratio = added / params
            print(f"{family}: {count / 1e6:.1f} M parameters, {params / 2**20:.0f} MiB; loading added "
                  f"{added / 2**20:.0f} MiB resident = {ratio:.2f}× (target ≤ 1.3) {'ok' if ratio <= 1.3 else 'MISSED'}")
        if not args.no_browser and "marian" in args.families:
            cold, cached = browser_times(base / "random-marian", args.rounds)
            print(f"\nAttention page, {count / 1e6:.0f} M-parameter Marian, 20-token sentences ({args.rounds} rounds):")
            print(f"  new sentence → every figure drawn: median {statistics.median(cold):.2f} s (max {max(cold):.2f}) "
                  f"target ≤ 3 s {'ok' if statistics.median(cold) <= 3 else 'MISSED'}")
            print(f"  sentence seen before: median {statistics.median(cached):.2f} s (max {max(cached):.2f}) "
                  f"target ≤ 0.5 s {'ok' if statistics.median(cached) <= 0.5 else 'MISSED'}")


if __name__ == "__main__":
    main()
