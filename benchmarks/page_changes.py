"""Seconds from a click to the page drawn, in Debian's Chromium, when the view is already computed: a page change
by the sidebar (target ≤ 1 s) and a tab switch (target ≤ 0.5 s), on h8 with a 20- and a 45-word sentence.

    .venv/bin/python -m benchmarks.page_changes [--laps 3] [--words 20,45]

Per sentence: one lap through every page and every tab computes and caches the views (not timed); then each lap
times every page change and every tab switch. "Click" is the moment the click event reaches the page; "drawn" the
moment Streamlit's run is over and every chart is drawn at its width, both read in the page
(tests/browser/harness.py SETTLED: the start of its stable window, so the window itself is not counted). Prints per
page the median (worst) over the laps.

For scale, in the same run and browser: a page change in a one-line two-page Streamlit app (a page of text, a page
with one 2 × 2 plotly heatmap), timed the same way. What any Streamlit page change costs this machine today; the
explorer's pages are printed as a multiple of it too (the machine's speed moved by 1.5× between days).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from benchmarks.measured import Measured
from scripts.screenshots import PAGES, SENTENCES
from tests.browser.harness import PAGE_TITLES, go_to, launch, offline_context, open_view, settle, streamlit_server

PAGE_TARGET, TAB_TARGET = 1.0, 0.5
FLOOR_APP = """
import plotly.graph_objects as go
import streamlit as st

st.sidebar.text_area("English sentence", "x")
st.navigation([st.Page(lambda: st.text("no chart"), title="Words", url_path="words"),
               st.Page(lambda: st.plotly_chart(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]))), title="Chart",
                       url_path="chart")]).run()
"""


# The moment the click reaches the page, read in the page: Playwright's click() first waits until its target is
# visible, stable and not covered, which is the driver's time, not the reader's (0.1–0.4 s on this machine).
MARK_CLICK = """() => { window.explorerClickAt = null;
    document.addEventListener('click', () => { window.explorerClickAt = performance.now(); },
                              {capture: true, once: true}); }"""


def timed_click(page, click) -> float:
    """Seconds from the click to the page drawn (the start of the harness's stable window)."""
    page.evaluate(MARK_CLICK)
    click()
    settle(page)
    return (page.evaluate("() => window.explorerSettle.since - window.explorerClickAt")) / 1000


def tabs(page) -> list:
    return [tab for tab in page.locator('[data-testid="stMain"] [role="tab"]').all() if "bertviz" not in tab.inner_text()]


def lap(page, timings: dict | None) -> None:
    """Every page by the sidebar, and each of its tabs, back to its first tab; timed into `timings` when given."""
    for name in PAGES:
        seconds = timed_click(page, lambda name=name: go_to(page, PAGE_TITLES[name]))
        if timings is not None:
            timings.setdefault(name, []).append(seconds)
        for tab in [*tabs(page)[1:], *tabs(page)[:1]]:
            label = tab.inner_text()
            seconds = timed_click(page, tab.click)
            if timings is not None:
                timings.setdefault(f"{name} · tab {label}", []).append(seconds)


def floor_page_changes(browser, folder: Path, laps: int) -> dict[str, float]:
    """Median seconds of a page change in FLOOR_APP: to its page of text, and to its page with one chart."""
    script = folder / "floor.py"
    script.write_text(FLOOR_APP)
    times = {"Words": [], "Chart": []}
    with streamlit_server(folder / "floor.log", script=script) as url:
        context = offline_context(browser)
        page = context.new_page()
        page.goto(url)
        settle(page)
        for lap_number in range(laps + 1):
            for title in ("Chart", "Words"):
                seconds = timed_click(page, lambda title=title: go_to(page, title))
                if lap_number:                              # the first lap loads the chart's code: not timed
                    times[title].append(seconds)
        context.close()
    return {title: statistics.median(values) for title, values in times.items()}


def verdict(seconds: float, target: float) -> str:
    return "ok" if seconds <= target else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--laps", type=int, default=3)
    parser.add_argument("--words", default="20,45")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, streamlit_server(Path(folder) / "server.log") as url, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        context = offline_context(browser)
        measured = Measured("page_changes")
        for words in (int(w) for w in args.words.split(",")):
            page = open_view(context, url, PAGES[-1], model="h8", sentence=SENTENCES[words])
            lap(page, None)                                 # computes and caches every view
            timings: dict[str, list[float]] = {}
            for _ in range(args.laps):
                lap(page, timings)
            page.close()
            print(f"{words} words, h8, view computed: click → drawn, median (worst) of {args.laps} laps, "
                  f"Chromium {browser.version}")
            worst = {"page": 0.0, "tab": 0.0}
            for name, seconds in timings.items():
                kind, target = ("tab", TAB_TARGET) if " · tab " in name else ("page", PAGE_TARGET)
                median = statistics.median(seconds)
                worst[kind] = max(worst[kind], median)
                print(f"  {name:48s} {median:5.2f} ({max(seconds):.2f}) s  target ≤ {target} s {verdict(median, target)}")
            print(f"  slowest median: page change {worst['page']:.2f} s, tab switch {worst['tab']:.2f} s")
            measured.add(f"page change, view computed, slowest page, {words} words", worst["page"], "s", PAGE_TARGET)
            measured.add(f"tab switch, slowest tab, {words} words", worst["tab"], "s", TAB_TARGET)
            slowest = worst["page"]
        print(f"requests blocked (non-localhost): {len(context.blocked)}")
        floor = floor_page_changes(browser, Path(folder), args.laps)
        print(f"for scale, a one-line two-page Streamlit app, median of {args.laps}: page change to text "
              f"{floor['Words']:.2f} s, to one 2 × 2 heatmap {floor['Chart']:.2f} s; the explorer's slowest page "
              f"change (at the last length) is {slowest / floor['Chart']:.1f}× the latter")
        measured.save()
        browser.close()


if __name__ == "__main__":
    main()
