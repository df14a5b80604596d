"""Screenshots of every Lesson step at 5, 20 and 45 tokens, at 1400 and 1024 px wide, for looking at what a student
and a projector see.

    .venv/bin/python -m scripts.lesson_screenshots [--out /tmp/lesson-shots] [--sizes 5,20,45] [--widths 1400,1024]
                                                   [--extra projector=on]

Each (sentence, width) opens the Lesson cold on a deep link and walks it with Next ▶, one PNG per step
(`{tokens}-{width}-{step:02}-{slug}.png`). The window is as wide as named and tall enough for the whole step
(Streamlit scrolls its main area inside the window, so a 768 px window would show only its top).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import sync_playwright

from explorer.pages.registry import page as registered
from tests.browser.harness import launch, offline_context, query_parameters, settle, streamlit_server

SENTENCES = {   # pieces the 8-head model reads, </s> included
    5: "Two dogs play.",
    20: "The animal didn't cross the street because it was too tired.",
    45: ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
         "old man with a grey hat sits on a wooden bench reading a newspaper under a green umbrella."),
}

LESSON = registered("lesson")       # its address: the root while it is the page the app opens on


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/lesson-shots")
    parser.add_argument("--sizes", default="5,20,45")
    parser.add_argument("--widths", default="1400,1024")
    parser.add_argument("--height", type=int, default=2200)
    parser.add_argument("--extra", default="", help="more query parameters, e.g. 'projector=on'")
    arguments = parser.parse_args()
    out = Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = dict(part.split("=", 1) for part in arguments.extra.split("&") if part)
    with tempfile.TemporaryDirectory() as folder, streamlit_server(Path(folder) / "server.log") as url, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        for size in (int(s) for s in arguments.sizes.split(",")):
            for width in (int(w) for w in arguments.widths.split(",")):
                context = offline_context(browser)
                page = context.new_page()
                page.set_viewport_size({"width": width, "height": arguments.height})
                page.goto(f"{url}/{LESSON.url_path}?{urlencode(dict(sentence=SENTENCES[size], **extra))}")
                page.get_by_text("Lesson: your sentence through the Transformer").wait_for(timeout=120_000)
                settle(page)
                number = 1
                while True:
                    slug = query_parameters(page)["lesson"]
                    path = out / f"{size}-{width}-{number:02}-{slug}.png"
                    page.screenshot(path=str(path))
                    print(path, flush=True)
                    following = page.get_by_role("button", name="Next ▶")
                    if following.is_disabled():
                        break
                    following.click()
                    page.wait_for_function(f"() => new URLSearchParams(location.search).get('lesson') !== '{slug}'",
                                           timeout=60_000)
                    settle(page)
                    number += 1
                context.close()
        browser.close()


if __name__ == "__main__":
    main()
