"""Interleaved A/B of page changes: the same pages of two (or more) checkouts of the explorer, each on its own
server, clicked in turn in one browser, so that the machine's drift (0.3–0.4 s a page between two runs an hour
apart on this shared 2-core machine) falls on every version alike.

    git worktree add /tmp/before HEAD~1 && ln -s "$PWD/.venv" /tmp/before/.venv
    .venv/bin/python -m benchmarks.page_ab --pages attention,compare . /tmp/before

Each lap changes from Translation (or --start) to a page and back, for every page and checkout in turn, with a 45-word sentence
(the view computed once before the laps); prints each page's median and fastest time per checkout. A checkout
needs the models and explorer/data beside it, as the main one has them.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from benchmarks.page_changes import timed_click
from scripts.screenshots import SENTENCES
from tests.browser.harness import PAGE_TITLES, go_to, launch, offline_context, open_view, streamlit_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="+", type=Path, help="the explorer's folders to compare")
    parser.add_argument("--pages", default="attention", help="pages by name, comma-separated (pages/registry.py)")
    parser.add_argument("--laps", type=int, default=5, help="timed laps (one more, untimed, comes first)")
    parser.add_argument("--words", type=int, default=45, choices=sorted(SENTENCES))
    parser.add_argument("--start", default="translation",
                        help="the page each change starts from and goes back to (a heavy one: its taking down counts)")
    args = parser.parse_args()
    pages = args.pages.split(",")
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as servers, sync_playwright() as playwright:
        urls = [servers.enter_context(streamlit_server(Path(folder) / f"server-{number}.log",
                                                       checkout=checkout.resolve()))
                for number, checkout in enumerate(args.checkouts)]
        browser = launch(playwright)
        tabs = [open_view(offline_context(browser), url, args.start, model="h8", sentence=SENTENCES[args.words])
                for url in urls]
        times = {(number, name): [] for number in range(len(urls)) for name in pages}
        for lap in range(args.laps + 1):
            for name in pages:
                for number, tab in enumerate(tabs):
                    seconds = timed_click(tab, lambda tab=tab, name=name: go_to(tab, PAGE_TITLES[name]))
                    timed_click(tab, lambda tab=tab: go_to(tab, PAGE_TITLES[args.start]))
                    if lap:                     # the first lap draws each page once: not timed
                        times[number, name].append(seconds)
        for name in pages:
            print(f"{name} from {args.start}, {args.words} words, median (fastest) of {args.laps}: " + ";  ".join(
                f"{checkout}: {statistics.median(times[number, name]):.2f} ({min(times[number, name]):.2f}) s"
                for number, checkout in enumerate(args.checkouts)), flush=True)
        browser.close()


if __name__ == "__main__":
    main()
