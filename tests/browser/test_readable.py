"""What a teacher projecting the explorer sees, at 20 and 45 tokens, in Debian's Chromium 1400 px wide (and 1024 px,
a projector's): every token labelled (a long sentence's in a window of it), no figure squeezed or cut, nothing
printed over anything else, the colour scale said."""

import re

import pytest

from tests.browser.harness import go_to, open_view, settle

WORDS_20 = "A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side."
WORDS_45 = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
            "old man with a grey hat sits on a wooden bench reading a newspaper under a large green umbrella near "
            "the water.")


@pytest.fixture(scope="module")
def context(warm_context):
    yield warm_context
    assert warm_context.blocked == []


@pytest.fixture(scope="module")
def attention_45(context, app_url):
    page = open_view(context, app_url, "attention", model="h8", sentence=WORDS_45)
    yield page
    page.close()


@pytest.fixture(scope="module")
def internals_45(context, app_url):
    page = open_view(context, app_url, "internals", model="h8", sentence=WORDS_45)
    yield page
    page.close()


@pytest.fixture(scope="module")
def long_sentence_tab(context, app_url):
    """One tab on the 45-word sentence (h8), which each test that takes it moves to its own page by the sidebar."""
    page = open_view(context, app_url, "translation", model="h8", sentence=WORDS_45)
    yield page
    page.close()


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    settle(page)


def chart(page, title: str):
    """The plotly chart whose title contains `title`."""
    found = page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".gtitle", has_text=title))
    found.first.wait_for()
    return found.first


def boxes(locator) -> list[dict]:
    return locator.evaluate_all("elements => elements.map(e => { const r = e.getBoundingClientRect(); "
                                "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })")


def overlapping(boxes: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of boxes that overlap by more than a pixel each way."""
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1
            and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1]


def heatmap(page, title: str):
    """The one-head heatmap (an HTML table: explorer/figures/token_heatmap.py) whose title contains `title`."""
    found = page.locator(".token-heatmap").filter(has_text=title)
    assert found.count() == 1, f"{found.count()} heatmaps titled {title!r}"
    return found


def test_a_long_sentence_gets_a_window_with_every_label_and_the_whole_pattern(attention_45):
    window = heatmap(attention_45, "encoder, layer 0, head 0")
    keys = window.locator(".key-label").all_text_contents()
    queries = window.locator(".query-label").all_text_contents()
    count = len(keys)                                   # the window's keys
    assert 20 <= count < 45                             # all 49 keys had 9 px labels, rotated into each other
    assert len(queries) == count and keys[0] == "0 ▁A" and window.locator("td").count() == count * count
    sizes = window.locator(".key-label, .query-label").evaluate_all(
        "labels => labels.map(l => parseFloat(getComputedStyle(l).fontSize))")
    assert min(sizes) >= 11
    labels = boxes(window.locator(".key-label")) + boxes(window.locator(".query-label"))
    assert overlapping(labels) == [] and all(b["right"] - b["left"] >= 10 for b in labels)   # upright, 11 px apart
    cells = boxes(window.locator("td"))
    assert overlapping(labels + cells[:count]) == []                # no label over a cell
    assert f"tokens 0–{count - 1} of 49" in window.text_content()
    whole = attention_45.locator(".whole-pattern")                  # an image (explorer/figures/thumbnails.py)
    assert "The whole pattern: 49 × 49" in whole.text_content()
    assert whole.locator("img").evaluate("i => i.complete && i.naturalWidth") == 49
    assert whole.locator(".key-number").all_text_contents()[:3] == ["0", "5", "10"]
    numbers = boxes(whole.locator(".key-number, .query-number"))
    image = boxes(whole.locator("img"))[0]
    assert overlapping(numbers) == [] and overlapping(numbers + [image]) == []      # around the image, apart


def test_the_colour_scale_says_which_it_is_and_can_follow_the_figure(context, app_url, attention_45):
    absolute = heatmap(attention_45, "encoder, layer 0, head 0")
    assert absolute.locator(".legend").get_attribute("data-legend") == "weight (0–1)"
    page = open_view(context, app_url, "attention", model="h8", sentence=WORDS_45, scale="per-figure")
    try:
        per_figure = heatmap(page, "encoder, layer 0, head 0")
        key = per_figure.locator(".legend").get_attribute("data-legend")     # "weight (0–0.87, whole pattern)"
        # the darkest colour is the head's own largest weight, not 1: the window is coloured as the whole pattern
        top = float(re.search(r"0–([\d.]+), whole pattern", key).group(1))
        whole = page.locator(".whole-pattern .legend").get_attribute("data-legend")     # "weight (0–0.87, this figure)"
        largest = float(re.search(r"0–([\d.]+), this figure", whole).group(1))
        assert top == pytest.approx(largest, abs=0.006) and top < 1
    finally:
        page.close()


def test_bertviz_model_view_shows_every_layer_in_its_frame(attention_45):
    attention_45.get_by_role("tab", name="bertviz model view").click()
    frame = attention_45.locator("iframe").first
    frame.wait_for()
    attention_45.frame_locator("iframe").first.locator("svg line").first.wait_for(state="attached", timeout=60_000)
    attention_45.wait_for_timeout(1000)             # the frame takes its content's height
    content = frame.evaluate("f => f.contentDocument.documentElement.scrollHeight")
    assert content <= frame.evaluate("f => f.getBoundingClientRect().height") + 2    # on main: 365 of 714 px
    attention_45.get_by_role("tab", name="Every head").click()


def test_scores_mask_softmax_labels_its_keys_and_has_colour_bars(context, app_url):
    page = open_view(context, app_url, "internals", model="h8", sentence=WORDS_45, head="decoder.0.0",
                     part="Scores → softmax")
    figure = chart(page, "the model's real numbers")
    keys = figure.locator(".xtick text").count()
    # The decoder's 30-odd German pieces: more than a projector's column labels one by one, so a label every
    # other key (stretched_length), as many as 430 px hold 16 px apart; hover and zoom name every key.
    queries = figure.locator(".ytick text").count()       # down the side every one (decoder: queries = keys)
    assert queries > 30 and queries // 2 <= keys <= 430 // 16 + 1
    assert "drag over a region" in figure.locator(".gtitle").text_content()
    for axis in ("x2", "x3", "x4"):                     # every panel labels the same keys (on main: every 3rd)
        assert figure.locator(f".{axis}tick text").count() == keys
    assert figure.locator(".colorbar").count() == 2     # scores and weights; on main: none
    assert overlapping(boxes(figure.locator(".g-xtitle, .annotation-text"))) == []
    page.close()


def test_a_long_sentence_still_gets_its_padding_mask(internals_45):
    open_tab(internals_45, "Masks")
    figure = internals_45.locator(".padding-mask")             # HTML (explorer/figures/padding_mask.py)
    figure.wait_for()
    assert "shorter sentence padded to your sentence" in figure.text_content()
    assert figure.locator(".sentence-name").count() == 2
    # every piece of both sentences written in its cell, upright, none on another, all in the page's column
    pieces = figure.locator(".piece")
    assert pieces.count() == 2 * figure.locator(".position").count() >= 2 * 49
    assert overlapping(boxes(pieces)) == [] and overlapping(boxes(figure.locator(".position"))) == []
    right = internals_45.locator('[data-testid="stMainBlockContainer"]').evaluate("e => e.getBoundingClientRect().right")
    assert max(box["right"] for box in boxes(figure.locator(".mask-cell"))) <= right


def test_the_walkthrough_opens_on_a_word_and_says_its_scaling_plainly(internals_45):
    open_tab(internals_45, "Q, K, V walkthrough")
    query = internals_45.get_by_label("Query token").first.input_value()
    label = query.split(":", 1)[1].strip()
    assert any(character.isalnum() for character in label), query      # on main: "13: ▁"
    figure = chart(internals_45, "scores over the keys")
    titles = " ".join(figure.locator(".annotation-text").all_text_contents())
    assert "√d_k (√32 = 5.66)" in titles and "= ÷" not in titles


def test_compare_sets_the_models_side_by_side_on_the_focus_token_at_45_tokens(long_sentence_tab):
    page = long_sentence_tab
    go_to(page, "Compare models")
    settle(page)
    strips = page.locator(".focus-strips")
    strips.wait_for(timeout=30_000)
    models = [boxes(strips.locator(f'td[data-model="{name}"]')) for name in ("en-de-h8", "en-de-h2", "en-de-h1")]
    assert [len(cells) for cells in models] == [8 * 49, 2 * 49, 49]      # on main once: 11 heatmaps one under another
    first_rows = [min(cell["top"] for cell in cells) for cells in models]
    assert max(first_rows) - min(first_rows) < 1                                     # side by side
    spans = [(min(c["left"] for c in cells), max(c["right"] for c in cells)) for cells in models]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert min(cell["bottom"] - cell["top"] for cell in models[0]) >= 13             # a label's height a key
    labels = strips.locator("th[title]")
    assert labels.count() == 49 and overlapping(boxes(labels)) == []
    assert min(labels.evaluate_all("ts => ts.map(t => parseFloat(getComputedStyle(t).fontSize))")) >= 11
    right = page.locator('[data-testid="stMainBlockContainer"]').evaluate("e => e.getBoundingClientRect().right")
    assert max(span[1] for span in spans) <= right                                   # whole in the column
    overview = page.locator(".every-head-of-every-model")          # the tiles: explorer/figures/thumbnails.py
    images = boxes(overview.locator("td.tile img"))
    assert len(images) == 8 + 2 + 1 and overlapping(images) == []
    assert min(image["right"] - image["left"] for image in images) >= 60           # a head's pattern, not a speck
    assert all(image["right"] - image["left"] == pytest.approx(image["bottom"] - image["top"], abs=1.5)
               for image in images)                                                # 49 × 49: square cells
    assert overview.locator("td.tile img").evaluate_all("ims => ims.every(i => i.complete && i.naturalWidth == 49)")
    names = boxes(overview.locator("td.tile > div:first-child"))
    assert overlapping(names) == []                 # on main once: "head Bead 1"
    assert max(image["right"] for image in images) <= right                        # whole in the column
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    assert height < 5000                            # on main: 13,082 px


def test_the_prune_diff_wraps_and_the_curve_legend_keeps_off_its_title(context, app_url):
    page = open_view(context, app_url, "prune", model="h8", sentence=WORDS_20, pruned="cross.2.*")
    try:
        diff = page.locator('[data-testid="stHtml"] div').first
        assert diff.locator("span").count() > 10
        width = diff.evaluate("d => [d.scrollWidth, d.parentElement.clientWidth]")
        assert width[0] <= width[1]                     # on main: 1,534 px in a 940 px column
        page.get_by_text("Show the curve shipped with").click()         # drawn when opened
        curve = chart(page, "Pruning curve")
        legend, title = boxes(curve.locator(".legend")), boxes(curve.locator(".gtitle"))
        assert overlapping(legend + title) == []        # on main: the legend over the subtitle
    finally:
        page.close()


def test_the_token_table_shows_every_token_without_a_scroll_box(long_sentence_tab):
    page = long_sentence_tab
    go_to(page, "Translation")
    settle(page)
    table = page.locator('[data-testid="stDataFrame"]').first
    rows = 49                                           # the 45 words' pieces and </s>
    assert table.evaluate("t => t.getBoundingClientRect().height") >= 35 * (rows + 1)       # on main: 10 rows
