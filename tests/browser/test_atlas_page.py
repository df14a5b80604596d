"""The Atlas page in Chromium (issue 62): a click on a head of the map chooses it (the box, the ring and the URL
agree), its button opens that head on the Attention page, and at a projector's 1024 px the map, the query–key space
and the search read whole (nothing wider than the window, no text under 11 px)."""

from tests.browser.harness import open_view, query_parameters, settle
from tests.browser.test_lesson import LAYOUT


def test_a_click_on_the_map_chooses_the_head_and_its_button_opens_it(context, app_url):
    page = open_view(context, app_url, "atlas", model="h8", captions="50")
    page.locator(".gtitle", has_text="24 encoder heads over 50 captions").wait_for(timeout=120_000)
    settle(page)
    # enc.1.6's point: the map names each of its 24 heads beside its point
    label = page.locator(".scatterlayer .textpoint", has_text="enc.1.6").first
    box = label.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] + 8)      # the point under its name
    page.wait_for_function("() => new URLSearchParams(location.search).get('head') === 'encoder.1.6'",
                           timeout=60_000)
    settle(page)
    assert page.get_by_label("Head", exact=True).first.input_value() == "enc.1.6"
    page.get_by_role("button", name="Open enc.1.6 on the Attention page →").click()
    page.wait_for_function("() => location.pathname.endsWith('/attention')", timeout=60_000)
    settle(page)
    assert query_parameters(page)["head"] == "encoder.1.6"
    page.locator(".token-heatmap", has_text="encoder, layer 1, head 6").first.wait_for(timeout=60_000)
    assert context.blocked == []


def test_every_view_reads_whole_at_a_projectors_width(context, app_url):
    page = context.new_page()
    page.set_viewport_size({"width": 1024, "height": 768})
    for view in ("Head map", "Queries and keys", "Search heads"):
        page.goto(f"{app_url}/atlas?model=all-MiniLM-L6-v2&captions=50&view={view.replace(' ', '+')}")
        page.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for(timeout=120_000)
        settle(page)
        assert page.evaluate(LAYOUT) == {"wide": [], "cut": [], "small": []}, view
    page.close()
    assert context.blocked == []
