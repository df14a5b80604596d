"""Long inputs: every page on a 250-token text (the bundled models, 256 positions) and a 500-token text (a
BERT-base-sized and a GPT-2-small-sized model with random weights), timed in the server, with the size of what it
sends the browser.

    .venv/bin/python -m benchmarks.long_inputs [--models h8,h2,h1,bert,gpt2] [--pages attention,internals]
                                               [--rounds 1] [--browser]

Per page (and per tab of Attention and Internals, each drawn on its own): the seconds of one Streamlit run of the
page with the trace already cached (AppTest: the script from start to finish in the server, no browser drawing),
the kilobytes of plotly figure JSON it sends (browser drawing time grows with it) plus any embedded HTML (bertviz),
and the heatmap cells / bar points it draws. The first row per model, "trace", is the first page's run with
the trace computed (translate and capture every hook point). Each page is timed on its first visit (its own
first-visit work included, e.g. Prune's example sentences); --rounds 2 prints the faster of two. Internals opens on
decoder self-attention (a translation's few dozen tokens), so "internals (encoder)" times its tabs on the 250-token
source too. Target: every page ≤ 5 s.

The two Hugging Face models are built here at their real size (BertConfig(), GPT2Config() defaults: 12 layers,
12 heads, d_model 768) with random weights and a tokenizer trained on Multi30k's captions (no hub download),
saved with save_pretrained into a temporary folder that the explorer opens like any other.

--browser adds one real-browser timing per page (Debian's Chromium): from opening the page's link to every chart
drawn, for the bundled h8 model, on the long text and, as the floor a new tab costs anyway, on a 5-token caption.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np

import explorer.settings as settings
from explorer.pages.registry import DEFAULT
from explorer.pages.registry import page as registered

logging.getLogger("streamlit").setLevel(logging.ERROR)     # AppTest's "missing ScriptRunContext" warnings
ROOT = Path(__file__).resolve().parents[1]
MULTI30K = settings.MULTI30K
BUNDLED_LABELS = {"h8": "8 heads (en-de-h8)", "h2": "2 heads (en-de-h2)", "h1": "1 head (en-de-h1)"}
# (page file, session-state key of its tabs, the tabs); None: a page without tabs
PAGES = {
    "translation": ("translation.py", None, [None]),
    "attention": ("attention.py", "attention_view",
                  ["Every head", "Head average", "Rollout & flow", "bertviz head view", "bertviz model view"]),
    "internals": ("internals.py", "internals_part",
                  ["Masks", "Scores → softmax", "Positions", "Q, K, V walkthrough"]),
    # Internals opens on decoder self-attention, a translation's few tokens: the long source's encoder too
    "internals (encoder)": ("internals.py", "internals_part", ["Masks", "Scores → softmax", "Q, K, V walkthrough"]),
    "decoding": ("decoding.py", None, [None]),
    "heads": ("heads.py", None, [None]),
    "compare": ("compare.py", None, [None]),
    "prune": ("prune.py", None, [None]),
}
TARGET_SECONDS = 5.0
SHORT = "The animal didn't cross the street because it was too tired."     # scripts/screenshots.py's 5 tokens


# -- the texts --

def captions(split: str = "val") -> list[str]:
    with gzip.open(MULTI30K / f"{split}.en.gz", "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip()]


def text_of(model, tokens: int) -> str:
    """Multi30k validation captions joined, then words of the next one, until the model reads `tokens` pieces
    (its encoder's input, or a decoder-only model's prompt, special tokens included)."""
    text = ""
    for caption in captions():
        for word in caption.split():
            longer = f"{text} {word}".strip()
            if len(model.encode(longer).ids) > tokens:
                return text
            text = longer
    return text


# -- the Hugging Face models at real size --

def train_tokenizer(kind: str, vocab_size: int):
    """A tokenizer trained on Multi30k's captions (offline, like tests/hugging_face_models.py), padded with
    placeholder tokens to the model's default vocabulary size, so the embedding and output layers are real-sized."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    corpus = captions("train")
    if kind == "bert":
        backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        backend.pre_tokenizer = pre_tokenizers.Whitespace()
        backend.decoder = decoders.WordPiece()
        backend.train_from_iterator(corpus, trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
        tokenizer = transformers.BertTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    else:
        backend = Tokenizer(models.BPE())
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        backend.train_from_iterator(corpus, trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        tokenizer = transformers.GPT2TokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>",
                                                   bos_token="<|endoftext|>", unk_token="<|endoftext|>")
    missing = vocab_size - len(tokenizer)
    if missing > 0:
        tokenizer.add_tokens([f"<extra_{i}>" for i in range(missing)])
    return tokenizer


def build_hugging_face(kind: str, folder: Path) -> Path:
    """BERT-base-sized BertForMaskedLM or GPT-2-small-sized GPT2LMHeadModel, random weights, saved in folder."""
    import torch
    import transformers

    torch.manual_seed(0)
    if kind == "bert":
        config = transformers.BertConfig()                   # 12 × 12 heads, 768, 512 positions
        tokenizer = train_tokenizer("bert", config.vocab_size)
        model = transformers.BertForMaskedLM(config)
    else:
        config = transformers.GPT2Config()                   # 12 × 12 heads, 768, 1024 positions
        tokenizer = train_tokenizer("gpt2", config.vocab_size)
        config.eos_token_id = config.bos_token_id = tokenizer.eos_token_id
        model = transformers.GPT2LMHeadModel(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# -- what a page sends --

def cells(value) -> int:
    """Numbers in a plotly array as Streamlit sends it: a list (of lists) or {"bdata", "shape"} (plotly 6+)."""
    if isinstance(value, dict) and "bdata" in value:
        shape = [int(n) for n in str(value.get("shape", "")).split(",") if n.strip()]
        if shape:
            return int(np.prod(shape))
        return len(base64.b64decode(value["bdata"])) // np.dtype(value["dtype"]).itemsize
    if isinstance(value, list):
        return sum(cells(v) for v in value) if value and isinstance(value[0], (list, dict)) else len(value)
    return 0


def sent(at) -> tuple[float, float, int, int]:
    """(figure KB, embedded HTML KB, cells drawn, charts) of the page AppTest holds."""
    charts = at.get("plotly_chart")
    figure_bytes = sum(len(chart.proto.spec) for chart in charts)
    frames = sum(len(frame.proto.srcdoc) for frame in at.get("iframe") if hasattr(frame.proto, "srcdoc"))
    drawn = 0
    for chart in charts:
        for trace in json.loads(chart.proto.spec)["data"]:
            drawn += cells(trace.get("z")) if "z" in trace else cells(trace.get("x", []))
    return figure_bytes / 1024, frames / 1024, drawn, len(charts)


# -- the pages, in AppTest --

def session_for(model: str, folder: str | None) -> dict:
    if folder:
        return {"model": "Your own checkpoint folder…", "own_model": folder}
    return {"model": BUNDLED_LABELS[model]}


def time_pages(model: str, folder: str | None, text: str, pages: list[str], rounds: int) -> list[dict]:
    from streamlit.testing.v1 import AppTest

    rows = []

    def app():
        at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=600)
        at.session_state["sentence"] = text
        for key, value in session_for(model, folder).items():
            at.session_state[key] = value
        return at

    # The first run translates and captures (the trace is cached for the rest, as in the server).
    at = app()
    start = time.perf_counter()
    at.run()
    rows.append(dict(page="trace (first page, computed)", seconds=time.perf_counter() - start,
                     errors=[e.value for e in at.exception]))
    for name in pages:
        if name == "internals (encoder)" and folder:        # a Hugging Face model here has one kind of attention
            continue
        file, tab_key, tabs = PAGES[name]
        for tab in tabs:
            best = None
            for _ in range(rounds):
                at = app()
                at.run()
                if file != DEFAULT.file:        # the app opens on the default page; any other is switched to
                    at.switch_page(file)
                if tab_key:
                    at.session_state[tab_key] = tab
                if name == "internals (encoder)":
                    at.session_state["internals_kind"] = "encoder"
                start = time.perf_counter()
                at.run()
                seconds = time.perf_counter() - start
                best = seconds if best is None else min(best, seconds)
            figure_kb, html_kb, drawn, charts = sent(at)
            rows.append(dict(page=name + (f" · {tab}" if tab else ""), seconds=best, figure_kb=figure_kb,
                             html_kb=html_kb, cells=drawn, charts=charts, errors=[e.value for e in at.exception]))
            print(f"  {rows[-1]['page']:<44} {best:6.2f} s  {figure_kb + html_kb:8.0f} KB  {drawn:>9,} cells",
                  flush=True)
    return rows


# -- one real browser --

# Each page's link, opening on its first tab (Internals' long side: the encoder's scores → softmax)
# A view other than a page's first, by its deep link; every other name opens at its page's address (pages/registry.py).
BROWSER_PATHS = {"internals (encoder)": "internals?head=encoder.0.0&part=Scores+→+softmax"}


def browser_times(text: str, pages: list[str]) -> dict[str, float]:
    """Seconds from opening each page's deep link (h8, this text) to every chart drawn, cache warm."""
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    from tests.browser.harness import launch, offline_context, settle, streamlit_server

    times = {}
    with tempfile.TemporaryDirectory() as tmp, streamlit_server(Path(tmp) / "streamlit.log") as url, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        context = offline_context(browser)
        context.set_default_timeout(180_000)
        warm = context.new_page()
        warm.goto(f"{url}/?model=h8&sentence={quote(text)}")
        settle(warm)
        warm.close()
        for name in pages:
            page = context.new_page()
            path = BROWSER_PATHS.get(name) or registered(name).url_path
            start = time.perf_counter()
            page.goto(f"{url}/{path}{'&' if '?' in path else '?'}model=h8&sentence={quote(text)}")
            page.get_by_label("English sentence").first.wait_for()
            settle(page)
            times[name] = time.perf_counter() - start - 0.6        # settle's last round only confirms (0.6 s)
            page.close()
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="h8,h2,h1,bert,gpt2")
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--rounds", type=int, default=1, help="runs per page; the fastest is printed")
    parser.add_argument("--browser", action="store_true")
    args = parser.parse_args()
    pages = args.pages.split(",")

    from explorer.models.loader import open_model

    results, browser = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            folder = None
            if model in BUNDLED_LABELS:
                opened = open_model(ROOT / "models" / f"en-de-{model}")
                tokens = 250
            else:
                start = time.perf_counter()
                folder = str(build_hugging_face(model, Path(tmp) / model))
                opened = open_model(folder)
                tokens = 500
                print(f"{model}: built and saved in {time.perf_counter() - start:.0f} s", flush=True)
            text = text_of(opened, tokens)
            print(f"{model}: {len(opened.encode(text).ids)} tokens ({len(text)} characters)", flush=True)
            results[model] = {row["page"]: row for row in time_pages(model, folder, text, pages, args.rounds)}
            for row in results[model].values():
                if row["errors"]:
                    print(f"  {row['page']}: {row['errors']}")
            if args.browser and model == "h8":
                # The same pages on a short caption, as a floor: a new tab of this app costs seconds by itself.
                browser = {"long": browser_times(text, pages), "short": browser_times(SHORT, pages)}

    models = list(results)
    print("\nseconds (server run, AppTest) / figure KB sent / cells drawn; ✗ = over", TARGET_SECONDS, "s")
    print(f"{'page':<44}" + "".join(f"{m:>28}" for m in models))
    for page in dict.fromkeys(page for rows in results.values() for page in rows):
        line = f"{page:<44}"
        for model in models:
            row = results[model].get(page)
            if row is None:
                line += f"{'':>28}"
                continue
            mark = "✗" if row["seconds"] > TARGET_SECONDS else " "
            size = row.get("figure_kb", 0) + row.get("html_kb", 0)
            line += (f"{row['seconds']:>7.2f}{mark}{size:>8.0f} KB{row.get('cells', 0):>10,}" if "cells" in row
                     else f"{row['seconds']:>7.2f}{mark}{'':>20}")
        print(line)
    if browser:
        print("\nreal browser (Chromium, h8, trace cached): seconds from opening the page's link to every chart drawn")
        print(f"  {'page':<24} {'250 tokens':>10} {'5 tokens':>9}")
        for page, seconds in browser["long"].items():
            print(f"  {page:<24} {seconds:>9.2f}{'✗' if seconds > TARGET_SECONDS else ' '} {browser['short'][page]:>9.2f}")


if __name__ == "__main__":
    main()
