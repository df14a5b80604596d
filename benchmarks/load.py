"""A served explorer under load, and its memory: the figures in docs/serving.md.

    .venv/bin/python -m benchmarks.load [--browsers 10 --minutes 3] [--sessions 30] [--sentences 1000]

1. Browsers: one `start.sh --serve` server (pages/launch.py, with a token) and N Chromium contexts at once (one
   Chromium, each context its own Streamlit session), for a few minutes. Each context, over and over: types a new
   20-token sentence on the Attention page (timed from Ctrl+Enter to every figure drawn with the new sentence's
   tokens: the chosen head's heatmap and every head's grid), then switches to another page and back (each timed
   to that page's figures drawn). Prints p50/p95 of each, the errors (a timeout, an exception on the page), and
   the CPU share of the server and of Chromium over the run (of the machine's cores).
2. Sessions: S sessions (Streamlit's AppTest, one thread each, in one process like a server's sessions, their
   script runs taking turns: AppTest cannot run two at once) each with its own sentence and model, each opening
   every page; then every session is checked to see its own sentence, model and translation, and nobody else's.
   Prints resident memory before and after.
3. Memory: D distinct sentences of 5 to 250 tokens, each opened on one page in turn (all seven pages), in one
   process; prints resident memory every 100 sentences and the trace cache's bytes: the curve docs/serving.md quotes.
   Resident memory must stay under the stated cap (2 GB).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import random
import statistics
import threading
import time
from pathlib import Path

import psutil

import explorer.settings as settings
from explorer.pages.registry import DEFAULT
from explorer.pages.registry import page as registered
from tests.browser.harness import CHROMIUM, CHROMIUM_ARGS, streamlit_server

ROOT = Path(__file__).resolve().parents[1]
CORPUS = settings.MULTI30K
TOKEN = "load-benchmark"
# The pages a visitor moves between, by their names in the sidebar (pages/registry.py); each turn ends on HOME.
PAGES = [registered(name).title for name in ("translation", "attention", "internals", "decoding", "heads", "compare",
                                             "prune")]
HOME = registered("attention")
MEMORY_CAP = 2 * 2**30
# Every chart drawn, no run in progress; on the Attention page the heatmaps' key labels show the marker (a piece
# of the new sentence that the previous one lacks).
DRAWN = """
([marker]) => {
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  if (!document.querySelector('[data-testid="stText"], [data-testid="stPlotlyChart"], [data-testid="stAlert"]')) return false;
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  if (!charts.every(c => c.querySelector('.main-svg .cartesianlayer'))) return false;
  if (!marker) return true;
  const ticks = [...document.querySelectorAll('.js-plotly-plot .xtick text')].map(t => t.textContent);
  return charts.length >= 2 && ticks.some(t => t.includes(marker));
}
"""


def corpus_lines(name: str) -> list[str]:
    with gzip.open(CORPUS / name, "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip()]


def twenty_token_sentences(checkpoint) -> list[tuple[str, str]]:
    """(sentence, marker) for captions of exactly 20 tokens (19 pieces + </s>), each with a marker: its longest
    piece, as the heatmaps label it."""
    found = []
    for line in corpus_lines("train.en.gz"):
        pieces = checkpoint.encode(line).pieces
        if len(pieces) == 20:
            found.append((line, max((p.lstrip("▁") for p in pieces), key=len)))
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def figures(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: none"
    return (f"{name}: n={len(values)}, p50 {statistics.median(values):.2f} s, p95 {percentile(values, 0.95):.2f} s, "
            f"max {max(values):.2f} s")


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (every core, every process) since it started."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def server_process(port: int) -> psutil.Process:
    for process in psutil.process_iter(["cmdline"]):
        command = process.info["cmdline"] or []
        if "streamlit" in command and str(port) in command:      # the launcher execs `python -m streamlit run`
            return process
    raise RuntimeError(f"no server process on port {port}")


async def visitor(number: int, browser, url: str, sentences: list, until: float, results: dict) -> None:
    from urllib.parse import quote

    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    others = [title for title in PAGES if title != HOME.title]
    first, _ = sentences[number % len(sentences)]
    try:
        await page.goto(f"{url}/{HOME.url_path}?token={TOKEN}&sentence={quote(first)}")
        await page.get_by_label("English sentence").wait_for(timeout=120_000)
        await page.wait_for_function(DRAWN, arg=[""], timeout=120_000, polling=50)
    except Exception as error:
        results["errors"].append(f"visitor {number} first visit: {error.__class__.__name__}")
        await context.close()
        return
    turn = number
    while time.time() < until:
        turn += len(PAGES)
        sentence, marker = sentences[turn % len(sentences)]
        while marker.lower() in first.lower():      # the marker must be new to the page
            turn += 1
            sentence, marker = sentences[turn % len(sentences)]
        first = sentence
        try:
            box = page.get_by_label("English sentence")
            await box.fill(sentence)
            start = time.perf_counter()
            await box.press("Control+Enter")
            await page.wait_for_timeout(50)
            await page.wait_for_function(DRAWN, arg=[marker], timeout=60_000, polling=50)
            results["submit"].append(time.perf_counter() - start)
            for title in (others[turn % len(others)], HOME.title):
                start = time.perf_counter()
                await page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
                await page.wait_for_timeout(50)
                await page.wait_for_function(DRAWN, arg=[""], timeout=60_000, polling=50)
                results["switch"].append(time.perf_counter() - start)
            if await page.locator('[data-testid="stException"]').count():
                results["errors"].append(f"visitor {number}: an exception on the page")
        except Exception as error:
            results["errors"].append(f"visitor {number}: {error.__class__.__name__}: {str(error)[:120]}")
    await context.close()


async def browsers(count: int, minutes: float, url: str, sentences: list, results: dict) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        until = time.time() + 60 * minutes
        await asyncio.gather(*(visitor(n, browser, url, sentences, until, results) for n in range(count)))
        await browser.close()


def run_browsers(count: int, minutes: float, sentences: list) -> None:
    import tempfile
    from urllib.parse import urlparse

    print(f"\n## {count} browsers at once against one --serve server, {minutes:g} minutes")
    log = Path(tempfile.mkdtemp()) / "server.log"
    with streamlit_server(log, launch_options=["--serve", "--token", TOKEN]) as url:
        server = server_process(urlparse(url).port)
        results = {"submit": [], "switch": [], "errors": []}
        cpu_server, machine = cpu_seconds([server]), busy_seconds()
        started = time.time()
        asyncio.run(browsers(count, minutes, url, sentences, results))
        elapsed = time.time() - started
        server_cpu, machine_cpu = cpu_seconds([server]) - cpu_server, busy_seconds() - machine
        memory = server.memory_info().rss
    cores = psutil.cpu_count()
    print(figures("new 20-token sentence on Attention, submit → every figure drawn", results["submit"]))
    print(figures("page switch → every figure drawn", results["switch"]))
    print(f"errors: {len(results['errors'])}" + "".join(f"\n  {e}" for e in results["errors"][:10]))
    print(f"CPU over {elapsed:.0f} s on {cores} cores: the machine {machine_cpu / elapsed / cores:.0%} busy, of which "
          f"the server {server_cpu / elapsed / cores:.0%} and the rest (Chromium drawing, this driver) "
          f"{(machine_cpu - server_cpu) / elapsed / cores:.0%}; server resident memory {memory / 2**20:.0f} MB")
    refused = [line for line in log.read_text().splitlines() if "Traceback" in line]
    print(f"tracebacks in the server log: {len(refused)}")


# AppTest sets up and tears down Streamlit's runtime around each run, so two runs at once in one process break
# each other ("Runtime hasn't been created"): the sessions live in threads side by side, their runs take turns.
RUNS = threading.Lock()


def run(app) -> None:
    with RUNS:
        app.run()


def app_session(sentence: str, model: str, page: str):
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=300)
    app.query_params.update({"sentence": sentence, "model": model})
    run(app)
    if page != DEFAULT.file:            # the app opens on the default page; any other is switched to
        app.switch_page(page)
        run(app)
    return app


def run_sessions(count: int, sentences: list) -> None:
    """count sessions in threads, each its own sentence and model, every page; then each checked for its own."""
    from explorer.capture.translation import translate
    from explorer.models.loader import open_model

    print(f"\n## {count} sessions at once (AppTest, one thread each, one process)")
    process = psutil.Process()
    before = process.memory_info().rss
    models = {"h1": ROOT / "models" / "en-de-h1", "h2": ROOT / "models" / "en-de-h2", "h8": ROOT / "models" / "en-de-h8"}
    chosen = [(sentences[i][0], list(models)[i % 3]) for i in range(count)]
    apps, translations, errors = [None] * count, [None] * count, []
    # Compare and Prune last: AppTest cannot leave a page with a multiselect (it loses the widget's format_func).
    plain = ["translation.py", "attention.py", "internals.py", "decoding.py", "heads.py"]

    def session(index: int) -> None:
        sentence, model = chosen[index]
        order = plain[index % 5:] + plain[:index % 5] + [("compare.py", "prune.py")[index % 2]]
        try:
            app = app_session(sentence, model, order[0])
            for page in order:              # every page, as a visitor would
                if page != order[0]:
                    app.switch_page(page)
                    run(app)
                if app.exception:
                    errors.append(f"session {index} on {page}: {app.exception[0].value}")
                if page == "translation.py" and app.text:
                    translations[index] = app.text[0].value
            apps[index] = app
        except Exception as error:
            errors.append(f"session {index}: {error.__class__.__name__}: {error}")

    start = time.perf_counter()
    threads = [threading.Thread(target=session, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    leaks = 0
    for index, app in enumerate(apps):
        if app is None:
            continue
        sentence, model = chosen[index]
        expected = translate(open_model(str(models[model])), [sentence])[0]
        own = (app.session_state["sentence"] == sentence and translations[index] == expected
               and app.query_params.get("model") in (model, [model])
               and app.query_params.get("sentence") in (sentence, [sentence]))
        leaks += not own
    print(f"{count} sessions × 7 pages in {elapsed:.0f} s; errors {len(errors)}; sessions showing another's "
          f"sentence, model or translation: {leaks}")
    for error in errors[:5]:
        print("  " + error)
    print(f"resident memory: {before / 2**20:.0f} MB before, {process.memory_info().rss / 2**20:.0f} MB after")


def long_sentences(count: int, checkpoint, seed: int = 0) -> list[str]:
    """count distinct sentences of 5 to 250 tokens, made of captions (cut at a word to fit the length drawn)."""
    lines = corpus_lines("train.en.gz")
    generator = random.Random(seed)
    made = set()
    while len(made) < count:
        goal = generator.randint(5, 250)
        words = []
        while len(checkpoint.encode(" ".join(words)).ids) < goal:
            words += lines[generator.randrange(len(lines))].split()
        while len(words) > 1 and len(checkpoint.encode(" ".join(words)).ids) > goal:
            words.pop()
        made.add(" ".join(words))
    return sorted(made, key=lambda s: generator.random())


def run_memory(count: int, checkpoint) -> None:
    from explorer.pages.components.caches import SERVICE

    print(f"\n## Memory over {count} distinct sentences of 5–250 tokens, each on one page in turn")
    page_files = ["translation.py", "attention.py", "internals.py", "decoding.py", "heads.py", "compare.py", "prune.py"]
    sentences = long_sentences(count, checkpoint)
    process = psutil.Process()
    start, highest = time.perf_counter(), 0
    print("sentences  resident MB  trace cache MB (entries)  seconds")
    for index, sentence in enumerate(sentences, 1):
        app = app_session(sentence, "h8", page_files[index % len(page_files)])
        if app.exception:
            print(f"  sentence {index} on {page_files[index % len(page_files)]}: {app.exception[0].value}")
        highest = max(highest, process.memory_info().rss)
        if index % 100 == 0 or index == count:
            print(f"{index:9d}  {process.memory_info().rss / 2**20:11.0f}  {SERVICE.traces.bytes / 2**20:14.0f} "
                  f"({len(SERVICE.traces)})  {time.perf_counter() - start:7.0f}", flush=True)
    print(f"highest resident memory {highest / 2**20:.0f} MB (cap {MEMORY_CAP / 2**20:.0f} MB): "
          + ("under the cap" if highest < MEMORY_CAP else "OVER THE CAP"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--browsers", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=3)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--sentences", type=int, default=1000)
    options = parser.parse_args()
    from explorer.models.loader import open_model

    checkpoint = open_model(str(ROOT / "models" / "en-de-h8"))
    sentences = twenty_token_sentences(checkpoint)
    random.Random(1).shuffle(sentences)
    print(f"{len(sentences)} distinct 20-token sentences; {psutil.cpu_count()} cores")
    if options.browsers:
        run_browsers(options.browsers, options.minutes, sentences)
    if options.sessions:
        run_sessions(options.sessions, sentences)
    if options.sentences:
        run_memory(options.sentences, checkpoint)


if __name__ == "__main__":
    main()
