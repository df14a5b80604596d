"""The Images page in Debian's Chromium, opened cold by its address: every tab draws its figures over the digit,
whole at a projector's 1024 px; with the image model chosen in a link, the sidebar offers no sentence box and a
page about sentences sends the reader to Images."""

from tests.browser.harness import settle, wait_idle
from tests.browser.layout import layout_problems

TABS = ["One head", "Every head", "Rollout", "Positions", "Q, K, V", "Accuracy"]


def test_every_tab_draws_over_the_digit_at_a_projectors_width(context, app_url):
    page = context.new_page()
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{app_url}/images?model=h8&digit=10")
    page.locator(".gtitle", has_text="Class probabilities: 2").wait_for(timeout=120_000)
    settle(page)
    assert page.get_by_text("this page shows the bundled image model").count()
    found = []
    for tab in TABS:
        page.locator('[data-testid="stMain"] [role="tab"]', has_text=tab).click()
        settle(page)
        charts = page.locator('[data-testid="stPlotlyChart"] .main-svg').count()
        assert charts >= 3, f"{tab}: {charts} figures"         # the digit, the classes and the tab's own
        found += [f"{tab}: {problem}" for problem in layout_problems(page)]
    assert found == [], "\n".join(found)
    assert "section=Accuracy" in page.url and "digit=10" in page.url
    page.close()
    assert context.blocked == []


def test_the_image_model_in_a_link_has_no_sentence_and_sends_sentence_pages_to_images(context, app_url):
    page = context.new_page()
    page.goto(f"{app_url}/attention?model=vit")
    page.get_by_text("reads images, not sentences").wait_for(timeout=120_000)
    wait_idle(page)
    assert page.get_by_label("English sentence").count() == 0
    page.get_by_role("link", name="Images").first.click()
    page.locator(".gtitle", has_text="Class probabilities").wait_for(timeout=60_000)
    assert page.get_by_text("this page shows the bundled image model").count() == 0
    page.close()
    assert context.blocked == []
