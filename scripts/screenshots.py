"""Screenshots of every page at 5, 20 and 45 tokens, in Debian's Chromium, for looking at what a user sees.

    .venv/bin/python -m scripts.screenshots [--out /tmp/shots] [--pages attention,internals] [--model h8]
                                            [--sizes 5,20,45,250] [--wait 6000] [--tabs]

Each page opens from a deep link (model, sentence) in a window 1400 px wide and tall enough for the whole page
(Streamlit scrolls its main area inside the window, so a normal window shows one screen of it).
"""

from __future__ import annotations

import argparse
import functools
import tempfile
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import sync_playwright

from explorer.pages.registry import PAGES as REGISTERED
from tests.browser.harness import launch, offline_context, page_path, settle, streamlit_server

SENTENCES = {
    5: "A girl reads a book.",
    11: "The animal didn't cross the street because it was too tired.",      # the lecture's sentence
    20: "A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side.",
    45: ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
         "old man with a grey hat sits on a wooden bench reading a newspaper under a large green umbrella near "
         "the water."),
}
SERVED_TOKEN = "screenshots"
PAGES = [page.name for page in REGISTERED]     # every page by name (pages/registry.py), in the sidebar's order


@functools.cache
def sentence(size: int, model: str) -> str:
    """The sentence of `size` tokens: one of the above, or Multi30k validation captions joined until the model
    reads that many pieces (a long input: --sizes 100,250)."""
    if size in SENTENCES:
        return SENTENCES[size]
    from benchmarks.long_inputs import text_of
    from explorer.models.loader import open_model

    folder = Path(__file__).resolve().parents[1] / "models" / f"en-de-{model}"
    return text_of(open_model(folder if folder.is_dir() else model), size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/shots")
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--model", default="h8")
    parser.add_argument("--sizes", default="5,20,45")
    parser.add_argument("--extra", default="", help="more query parameters, e.g. 'pruned=cross.2.*'")
    parser.add_argument("--height", type=int, default=5000)
    parser.add_argument("--width", type=int, default=1400, help="the window's width (a projector: 1024)")
    parser.add_argument("--serve", action="store_true",
                        help="as a shared server shows it (start.sh --serve, with a token), corpus sections open")
    parser.add_argument("--tabs", action="store_true", help="one screenshot per tab of each page, not the first only")
    parser.add_argument("--wait", type=int, default=1500,
                        help="ms to let charts below the first screen draw (long inputs: 6000)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    served = ["--serve", "--token", SERVED_TOKEN] if args.serve else None
    with tempfile.TemporaryDirectory() as tmp, streamlit_server(Path(tmp) / "streamlit.log", launch_options=served) as url, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        context = offline_context(browser)
        context.set_default_timeout(120_000)
        page = context.new_page()
        page.set_viewport_size({"width": args.width, "height": args.height})
        for size in map(int, args.sizes.split(",")):
            for name in args.pages.split(","):
                link = f"{url}/{page_path(name)}?model={args.model}&sentence={quote(sentence(size, args.model))}"
                if args.extra:
                    link += "&" + args.extra
                if args.serve:
                    link += f"&token={SERVED_TOKEN}"
                page.goto(link)
                page.get_by_label("English sentence").first.wait_for()
                settle(page)
                if args.serve:          # the sections where a visitor's corpus and Ray settings would go
                    for section in ("Recompute on your own corpus",):
                        if page.get_by_text(section).count():
                            page.get_by_text(section).click()
                    if page.get_by_text("BLEU against references").count():
                        page.get_by_text("BLEU against references").click()
                    settle(page)
                page.wait_for_timeout(args.wait)      # charts below the first screen finish drawing
                target = out / f"{name}-{size}-{args.width}.png"
                page.screenshot(path=str(target))
                print(target, flush=True)
                tabs = page.locator('[data-testid="stMain"] [role="tab"]').all() if args.tabs else []
                for number, tab in enumerate(tabs[1:], start=2):
                    tab.click()
                    settle(page)
                    page.wait_for_timeout(args.wait)
                    target = out / f"{name}-{size}-{args.width}-tab{number}.png"
                    page.screenshot(path=str(target))
                    print(target, flush=True)
        if context.blocked:
            print("blocked requests:", context.blocked)
        browser.close()


if __name__ == "__main__":
    main()
