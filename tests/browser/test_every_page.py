"""Every page as a class sees it: at 1400×900 and at a projector's 1024×768, with a 5- and a 45-word sentence (Papers
and Glossary, which never show it, with the 5-word one), in Debian's Chromium. Up to 60 tokens every figure labels
every token, so these are the least and the most crowded a figure gets with every label; a 20-word walk between
them (29 s of the suite) is left to scripts/screenshots.py, and the figures at 20 tokens stay pinned by
tests/explorer/test_long_inputs.py. On each page and each of its tabs: nothing wider than the window or its column,
no label cut by an ellipsis, no figure text under 11 px, no empty figure (tests/browser/layout.py). With heads
pruned, every page either shows the pruned model or says at its top that it does not."""

import re

import pytest

from scripts.screenshots import PAGES, SENTENCES
from tests.browser.harness import PAGE_TITLES, go_to, open_view, settle
from tests.browser.layout import layout_problems

WIDE, PROJECTOR = {"width": 1400, "height": 900}, {"width": 1024, "height": 768}
PRUNED = "cross.0.*,cross.1.*"          # 16 heads of the 8-head model; changes the 5-word sentence's German
PRUNING_SAID = re.compile("16 (of 72 )?heads pruned")     # the Prune page counts them of all
NO_MODEL_OUTPUT = {"glossary"}          # a page about words, not about the model's run
SENTENCE_FREE = {"papers", "glossary", "images"}  # pages that never show the typed sentence: read at 5 words only


def tabs(page) -> list:
    return page.locator('[data-testid="stMain"] [role="tab"]').all()


def problems_at(page, name: str, size: dict, every_tab: bool, back_to_first: bool) -> list[str]:
    """Every problem on the page (and on each of its tabs) at the window's size, each prefixed with where it is.
    The page is left on its first tab if back_to_first, else on its last."""
    where = f"{name} at {size['width']}px"
    found = [f"{where}: {problem}" for problem in layout_problems(page)]
    others = [tab for tab in tabs(page)[1:] if "bertviz" not in tab.inner_text()] if every_tab else []
    for tab in others:                          # (bertviz draws in its own frame, checked in test_readable.py)
        label = tab.inner_text()
        tab.click()
        settle(page)
        found += [f"{where}, tab {label}: {problem}" for problem in layout_problems(page)]
    if others and back_to_first:
        tabs(page)[0].click()
        settle(page)
    return found


def problems_on(page, name: str) -> list[str]:
    """Every problem on the page at both sizes: as it opens at each, and every tab at the projector's width, where
    room is shortest. Read from the size the page arrived at to the other, so one resize a page (each resize
    redraws every figure)."""
    order = [WIDE, PROJECTOR] if page.viewport_size == WIDE else [PROJECTOR, WIDE]
    found = []
    for index, size in enumerate(order):
        if page.viewport_size != size:
            page.set_viewport_size(size)
            settle(page)                        # the figures follow the window's new width
        found += problems_at(page, name, size, every_tab=size == PROJECTOR, back_to_first=index == 0)
    return found


@pytest.mark.parametrize("words", [5, 45])
def test_every_page_reads_whole_at_both_sizes(context, app_url, words):
    """One tab through the pages by the sidebar, as a class moves (a deep link per page opened the app anew
    each time, 1–2 s more a page; deep links are tested in test_explorer.py)."""
    pruning = {"pruned": PRUNED} if words == 5 else {}
    found, silent = [], []
    page = open_view(context, app_url, PAGES[0], model="h8", sentence=SENTENCES[words], **pruning)
    for name in PAGES if words == 5 else [name for name in PAGES if name not in SENTENCE_FREE]:
        if name != PAGES[0]:
            go_to(page, PAGE_TITLES[name])
            settle(page)
        assert page.locator("h1").first.inner_text().startswith(PAGE_TITLES[name].split()[0]), name
        if pruning and name not in NO_MODEL_OUTPUT and not page.get_by_text(PRUNING_SAID).count():
            silent.append(name)
        found += problems_on(page, name)
    page.close()
    assert silent == [], f"pages silent about the pruned heads: {silent}"
    assert found == [], "\n".join(found)
    assert context.blocked == []
