"""The Heads page in Debian's Chromium, 1400 px wide, on the bundled 8-head model (72 heads): the table, the role
maps, the numbers and the sentence notices read as they should, measured on what the browser draws."""

import json
import re
from urllib.parse import quote

import pytest

from tests.browser.harness import POLL_MS, settle, wait_idle

SENTENCE = "Two dogs play in the snow."
OUT_OF_DOMAIN = "The quarterly earnings report exceeded analyst expectations despite inflation."


def open_heads(context, url: str, sentence: str = SENTENCE, section: str = ""):
    """The Heads page of a link, on its first tab (the role maps) or on `section` (the head's pattern)."""
    page = context.new_page()
    page.goto(f"{url}/heads?model=h8&sentence={quote(sentence)}" + (f"&section={quote(section)}" if section else ""))
    page.locator(".role-map td, .token-heatmap td").first.wait_for(timeout=90_000)
    settle(page)
    return page


@pytest.fixture(scope="module")
def heads_page(warm_context, app_url):
    """The Heads page of SENTENCE as it opens, for the tests that read it and leave it as they found it."""
    page = open_heads(warm_context, app_url)
    yield page
    page.close()
    assert warm_context.blocked == []


def radio(page, label: str, option: str) -> None:
    page.locator('[data-testid="stRadio"]', has_text=label).get_by_text(option, exact=True).click()
    settle(page)            # the rerun has redrawn every chart (not only finished: charts are replaced after it)


# The grid of st.dataframe is drawn on a canvas: its column edges are read from the pixels (the vertical lines
# that cross every row at the same x), its headers and texts from the accessible table glide renders inside the
# canvas (one <th> per column in view, with its 1-based aria-colindex).
GRID = """(longest) => {
    const canvas = document.querySelector('[data-testid="stDataFrame"] canvas[data-testid="data-grid-canvas"]');
    const context = canvas.getContext('2d');
    const rows = [18, 52, 90, 130].map(y => context.getImageData(0, y, canvas.width, 1).data);
    const colour = (row, x) => row[4 * x] + ',' + row[4 * x + 1] + ',' + row[4 * x + 2];
    const counts = {};
    for (let x = 0; x < canvas.width; x++) counts[colour(rows[0], x)] = (counts[colour(rows[0], x)] || 0) + 1;
    const background = Object.keys(counts).reduce((a, b) => counts[a] > counts[b] ? a : b);
    const edges = [];
    for (let x = 1; x < canvas.width - 1; x++) {
        const seen = rows.map(row => colour(row, x));
        if (seen.every(c => c === seen[0]) && seen[0] !== background && edges.at(-1) !== x - 1) edges.push(x);
    }
    const headers = [...canvas.querySelectorAll('th')].map(th => [th.textContent, Number(th.getAttribute('aria-colindex'))]);
    const measure = document.createElement('canvas').getContext('2d');
    measure.font = '14px ' + getComputedStyle(canvas).fontFamily;
    return {width: canvas.width, edges, headers, textWidth: measure.measureText(longest).width};
}"""


def grid(page, longest: str = "") -> dict:
    """The grid as painted: read until two reads 100 ms apart find the same column edges (the canvas is painted
    after its accessible table, later still on a busy machine)."""
    page.locator('[data-testid="stDataFrame"] th').first.wait_for(state="attached", timeout=30_000)
    found = page.evaluate(GRID, longest)
    for _ in range(100):
        page.wait_for_timeout(100)
        again = page.evaluate(GRID, longest)
        if again["edges"] and again["edges"] == found["edges"] and again["headers"] == found["headers"]:
            return again
        found = again
    return found


def column_span(found: dict, header: str) -> tuple[int, int] | None:
    """(left, right) x of the column headed `header` when the whole column is in view, else None."""
    index = dict(found["headers"]).get(header)
    if index is None or index > len(found["edges"]):
        return None
    return (found["edges"][index - 2] if index > 1 else 0), found["edges"][index - 1]


def test_the_chosen_importance_and_the_roles_are_in_view_and_whole(context, app_url):
    page = open_heads(context, app_url)
    radio(page, "Importance shown", "BLEU change when masked alone")          # the measure shown in the table
    wait_idle(page)
    found = grid(page)
    assert column_span(found, "Δ BLEU"), found     # wholly in the table's visible box, with no scrolling
    # Low thresholds give heads two roles: "positional, rare-token" must fit its column, uncut.
    page.get_by_text("Thresholds (change them").click()
    for label, value in (("positional", "0.3"), ("rare rate", "0.1"), ("rare over chance", "1")):
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")
        wait_idle(page)
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stDataFrame\"] td')]"
                           ".some(td => td.textContent === 'positional, rare-token')", timeout=30_000, polling=POLL_MS)
    found = grid(page, "positional, rare-token")
    roles = column_span(found, "roles")
    assert roles and column_span(found, "Δ BLEU"), found
    assert found["textWidth"] + 16 <= roles[1] - roles[0], found          # the text and glide's padding of 8 px a side


# What the browser drew of a role map (an HTML table): its title, heads, legend, and each written cell's text with
# its size, its width as laid out and its cell's.
ROLE_MAP = """map => {
    const cells = [...map.querySelectorAll('td')];
    const heads = map.querySelectorAll('tr:nth-child(3) td').length;
    const width = td => { const range = document.createRange(); range.selectNodeContents(td);
                          return range.getBoundingClientRect().width; };
    return {title: map.firstElementChild.textContent, heads, cells: cells.length,
            legend: map.querySelector('.legend').dataset.legend,
            right: map.querySelector('table').getBoundingClientRect().right,
            texts: cells.filter(td => td.textContent).map(td => ({
                text: td.textContent, size: parseFloat(getComputedStyle(td).fontSize), width: width(td),
                cell: td.clientWidth}))};
}"""


def role_maps(page) -> list[dict]:
    """The three role maps as drawn."""
    page.locator(".role-map td").first.wait_for(timeout=30_000)
    return [found.evaluate(ROLE_MAP) for found in page.locator(".role-map").all()]


def main_column_right(page) -> float:
    return page.locator('[data-testid="stMainBlockContainer"]').evaluate("e => e.getBoundingClientRect().right")


def test_the_role_maps_are_coloured_by_importance_with_short_readable_cells(heads_page):
    page = heads_page
    maps = role_maps(page)
    assert [m["title"] for m in maps] == ["Encoder self-attention", "Decoder self-attention (masked)",
                                          "Encoder–decoder cross-attention"], json.dumps(maps)[:500]
    for shown in maps:
        assert shown["heads"] == 8 and shown["cells"] == 3 * 8 and len(shown["texts"]) == 3 * 8
        assert shown["legend"] == "importance"                                     # by default: importance
        for text in shown["texts"]:
            assert re.fullmatch(r"-?\d+(\.\d+)?", text["text"]), text                # one short value
            assert text["size"] >= 11 and text["width"] <= text["cell"], text
    # Coloured by role instead: a role abbreviation or nothing in each cell, a legend naming the roles.
    radio(page, "Colour the maps by", "role")
    assert [shown["legend"] for shown in role_maps(page)] == ["role"] * 3
    radio(page, "Colour the maps by", "importance")             # as it was, for the next test on this page


def test_importance_in_significant_digits_and_chance_without_an_arrow(warm_context, app_url, h8):
    importance = json.loads((h8.path / "head_importance.json").read_text())
    first = next(h for h in importance["heads"] if h["spec"] == "enc.0.0")
    page = open_heads(warm_context, app_url, section="One head")
    # the head's numbers, above its pattern: waited for by name (a busy machine may still be drawing the tab)
    page.locator('[data-testid="stMetric"]', has_text="Gradient importance").wait_for(timeout=60_000)
    metrics = {m.locator('[data-testid="stMetricLabel"]').inner_text().strip(): m
               for m in page.locator('[data-testid="stMetric"]').all()}
    rare = metrics["Peaks on the rarest token"]
    assert "chance" in rare.locator('[data-testid="stMetricDelta"]').inner_text()
    arrows = rare.locator('[data-testid="stMetricDelta"] svg, [data-testid^="stMetricDeltaIcon"]')
    assert arrows.count() == 0                                  # chance is no rise: no arrow
    value = metrics["Gradient importance"].locator('[data-testid="stMetricValue"]').inner_text()
    assert value == f"{first['gradient_importance']:.3g}"       # 0.0159, not 0.016 (nor 0.000 for tiny scores)
    page.close()


def test_what_happened_to_the_sentence_is_said_under_the_title(context, app_url):
    page = open_heads(context, app_url, OUT_OF_DOMAIN)
    notice = page.locator('[data-testid="stAlert"]', has_text="far from what the model was trained on")
    notice.wait_for(timeout=30_000)
    first_map = page.locator(".role-map").first
    order = notice.evaluate("(notice, chart) => notice.compareDocumentPosition(chart)", first_map.element_handle())
    assert order & 4, "the notice should come before the first map"          # Node.DOCUMENT_POSITION_FOLLOWING
    title = page.get_by_role("heading", name="Heads", exact=True)
    assert title.evaluate("(title, notice) => title.compareDocumentPosition(notice)", notice.element_handle()) & 4


def test_at_a_projectors_width_every_table_column_and_map_value_is_whole(context, app_url):
    page = open_heads(context, app_url)
    page.set_viewport_size({"width": 1024, "height": 768})
    settle(page)
    # The three maps one under another at their own width, each cell's value inside its cell (at 1024 px the
    # maps beside the table ran their values together, "0.01€0.01701").
    right = main_column_right(page)
    maps = role_maps(page)
    assert len(maps) == 3
    for shown in maps:
        assert len(shown["texts"]) == 3 * 8 and all(t["width"] <= t["cell"] for t in shown["texts"]), shown
        assert shown["right"] <= right, (shown["right"], right)                   # whole in the column
    # The table a group of columns at a time, each group whole in the column (all at once: cut at "ra…").
    groups = {"importance and roles": ["importance", "roles", "confidence"],
              "positional": ["roles", "offset", "offset share"],
              "rare-token": ["rare rate", "rare chance", "rare or 2nd rarest"], "syntactic": ["roles", "syntactic"]}
    for group, headers in groups.items():
        page.locator('[data-testid="stButtonGroup"]').get_by_text(group, exact=True).click()
        settle(page)
        page.wait_for_function("h => [...document.querySelectorAll('[data-testid=\"stDataFrame\"] th')]"
                               ".some(th => th.textContent === h)", arg=headers[-1], timeout=30_000, polling=POLL_MS)
        found = grid(page)
        assert [h for h, _ in found["headers"]][1:] == headers, found
        # Every column but the last between two edges; the last reaching the table's right edge, nothing to scroll.
        assert all(column_span(found, header) for header in headers[:-1]), (group, found)
        scroller = page.locator('[data-testid="stDataFrame"] .dvn-scroller').first
        assert scroller.evaluate("s => s.scrollWidth <= s.clientWidth + 1"), group
