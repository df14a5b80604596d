"""Screenshots of every page at 5, 20 and 45 tokens, in Debian's Chromium, for looking at what a user sees.

    .venv/bin/python scripts/screenshots.py [--out /tmp/shots] [--pages attention,internals] [--model h8]

Each page opens from a deep link (model, sentence) in a window 1400 px wide and tall enough for the whole page
(Streamlit scrolls its main area inside the window, so a normal window shows one screen of it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser.harness import launch, offline_context, settle, streamlit_server  # noqa: E402

SENTENCES = {
    5: "The animal didn't cross the street because it was too tired.",
    20: "A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side.",
    45: ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
         "old man with a grey hat sits on a wooden bench reading a newspaper under a large green umbrella near "
         "the water."),
}
PAGES = ["", "attention", "internals", "decoding", "heads", "compare", "prune"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/shots")
    parser.add_argument("--pages", default=",".join(p or "translation" for p in PAGES))
    parser.add_argument("--model", default="h8")
    parser.add_argument("--sizes", default="5,20,45")
    parser.add_argument("--extra", default="", help="more query parameters, e.g. 'pruned=cross.2.*'")
    parser.add_argument("--height", type=int, default=5000)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, streamlit_server(Path(tmp) / "streamlit.log") as url, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        context = offline_context(browser)
        context.set_default_timeout(120_000)
        page = context.new_page()
        page.set_viewport_size({"width": 1400, "height": args.height})
        for size in map(int, args.sizes.split(",")):
            for name in args.pages.split(","):
                path = "" if name == "translation" else name
                link = f"{url}/{path}?model={args.model}&sentence={quote(SENTENCES[size])}"
                if args.extra:
                    link += "&" + args.extra
                page.goto(link)
                page.get_by_label("English sentence").first.wait_for()
                settle(page)
                page.wait_for_timeout(1500)       # charts below the first screen finish drawing
                target = out / f"{name}-{size}.png"
                page.screenshot(path=str(target))
                print(target, flush=True)
        if context.blocked:
            print("blocked requests:", context.blocked)
        browser.close()


if __name__ == "__main__":
    main()
