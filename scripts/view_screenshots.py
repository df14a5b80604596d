"""Screenshots of issue 22's views ("What attention does and does not explain") at 5, 20 and 45 tokens, each cut to
its own section of the page, in Debian's Chromium: for looking at them, and for the docs (docs/screenshots/).

    .venv/bin/python -m scripts.view_screenshots [--out docs/screenshots] [--sizes 5,20,45] [--views flow,lens]

A view is a page opened from a deep link, cut from one heading (or the page's top) to the next one, or to the
page's end. Streamlit scrolls its main area inside the window, so the window is made tall enough for the page.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import sync_playwright

from scripts.screenshots import sentence
from tests.browser.harness import launch, offline_context, settle, streamlit_server

ROOT = Path(__file__).resolve().parents[1]

# name: (page, extra query, the heading the view starts at ("" = the page's title), the heading it ends before)
VIEWS = {
    "norms": ("attention", "values=norm", "", "Every head"),
    "flow": ("attention", "view=Rollout+%26+flow", "Rollout & flow", ""),
    "words": ("attention", "units=words", "", "Every head"),
    "sinks": ("heads", "section=Attention+sinks", "Attention sinks on your sentence", ""),
    "detectors": ("heads", "section=Head+detectors", "Head detectors (Olsson et al. 2022)", ""),
    "faithfulness": ("faithfulness", "", "", ""),
    "lens": ("decoding", "", "Logit lens", "Greedy versus beam search"),
    "sampling": ("decoding", "", "Sampling", "Logit lens"),
    "patching": ("patching", "", "", ""),
}
WIDTH, HEIGHT = 1400, 9000


def top_of(page, heading: str) -> float | None:
    """The y of a heading (an h1–h3, or a tab's label) in the page, None when the page has none."""
    found = page.locator("h1, h2, h3").filter(has_text=heading).first
    if not found.count():
        found = page.get_by_role("tab", name=heading).first
    if not found.count():
        return None
    box = found.bounding_box()
    return None if box is None else box["y"]


def content_bottom(page) -> float:
    """Where the main area's content ends (the window is taller than the page)."""
    return page.evaluate("""() => {
        const blocks = [...document.querySelectorAll('[data-testid="stMainBlockContainer"] > div *')];
        return Math.max(...blocks.map(e => e.getBoundingClientRect().bottom).filter(b => b > 0));
    }""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--sizes", default="5,20,45")
    parser.add_argument("--views", default=",".join(VIEWS))
    parser.add_argument("--model", default="h8")
    parser.add_argument("--wait", type=int, default=2500, help="ms for charts below the first screen to draw")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, streamlit_server(Path(tmp) / "streamlit.log") as url, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        context = offline_context(browser)
        context.set_default_timeout(120_000)
        page = context.new_page()
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        for size in map(int, args.sizes.split(",")):
            for name in args.views.split(","):
                path, extra, start, end = VIEWS[name]
                link = f"{url}/{path}?model={args.model}&sentence={quote(sentence(size, args.model))}"
                page.goto(link + (f"&{extra}" if extra else ""))
                page.get_by_label("English sentence").first.wait_for()
                settle(page)
                page.wait_for_timeout(args.wait)
                top = top_of(page, start) if start else 0.0
                bottom = (top_of(page, end) if end else None) or content_bottom(page)
                if top is None:
                    print(f"{name}-{size}: no heading {start!r} on the page", file=sys.stderr)
                    continue
                left = 300          # the sidebar is not part of a view
                clip = {"x": left, "y": max(0.0, top - 8), "width": WIDTH - left,
                        "height": max(50.0, min(bottom, HEIGHT) - max(0.0, top - 8))}
                target = out / f"{name}-{size}.png"
                page.screenshot(path=str(target), clip=clip)
                print(target, flush=True)
        if context.blocked:
            print("blocked requests:", context.blocked)
        browser.close()


if __name__ == "__main__":
    main()
