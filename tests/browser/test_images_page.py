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


def test_a_box_dragged_on_the_canvas_inks_a_pixel_the_model_then_reads(context, app_url):
    page = context.new_page()
    page.goto(f"{app_url}/images?model=h8&digit=10")
    page.locator(".gtitle", has_text="Class probabilities").wait_for(timeout=120_000)
    page.get_by_text("draw one").click()
    settle(page)
    page.get_by_role("button", name="Blank paper").click()
    page.locator(".gtitle", has_text="your drawing").wait_for(timeout=60_000)
    settle(page)
    canvas = page.locator('[data-testid="stPlotlyChart"]', has_text="Drag a box over squares")
    points = canvas.locator(".scatterlayer .point")
    assert points.count() == 64
    box = points.nth(8 * 3 + 4).bounding_box()      # row 3, column 4: a small box dragged over it, as a person does
    page.mouse.move(box["x"] + 3, box["y"] + 3)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3, steps=5)
    page.mouse.up()
    # The selection reaches the app a moment after the mouse is let go: wait for the rerun to ink a square (one CI
    # run settled before the rerun began and read the blank paper).
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .scatterlayer .point')]
                 .some(p => getComputedStyle(p).fill === 'rgb(0, 0, 0)')""", timeout=60_000, polling=200)
    settle(page)
    colours = canvas.locator(".scatterlayer .point").evaluate_all("ps => ps.map(p => getComputedStyle(p).fill)")
    dark = [index for index, colour in enumerate(colours) if colour in ("rgb(0, 0, 0)",)]
    assert dark == [28], colours[26:31]
    drawn = page.locator('[data-testid="stPlotlyChart"]', has_text="your drawing")
    assert drawn.count() == 1                       # the model now reads the drawing: one inked pixel on blank paper
    page.close()
    assert context.blocked == []

