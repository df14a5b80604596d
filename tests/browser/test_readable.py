"""What a teacher projecting the explorer sees, at 20 and 45 tokens, in Debian's Chromium 1400 px wide: every
token labelled, no figure squeezed or cut, nothing printed over anything else, the colour scale said."""

import pytest

from tests.browser.harness import offline_context, open_view, settle

pytestmark = pytest.mark.xdist_group("browser-views")    # a second Streamlit server and Chromium, on the other xdist worker

WORDS_20 = "A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side."
WORDS_45 = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side and an "
            "old man with a grey hat sits on a wooden bench reading a newspaper under a large green umbrella near "
            "the water.")


@pytest.fixture(scope="module")
def context(browser):
    context = offline_context(browser)
    yield context
    assert context.blocked == []
    context.close()


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


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    settle(page)


def chart(page, title: str):
    """The plotly chart whose title contains `title`."""
    found = page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".gtitle", has_text=title))
    found.first.wait_for()
    return found.first


def tick_texts(chart, axis: str = "x") -> list[str]:
    return chart.locator(f".{axis}tick text").all_text_contents()


def boxes(locator) -> list[dict]:
    return locator.evaluate_all("elements => elements.map(e => { const r = e.getBoundingClientRect(); "
                                "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })")


def overlapping(boxes: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of boxes that overlap by more than a pixel each way."""
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1
            and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1]


def token_count(page, kind: str = "encoder") -> int:
    """The tokens of the chosen head's heatmap, as its hover labels number them ("48 </s>": 49 tokens)."""
    return page.evaluate("""() => {
        const plot = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
        return plot.data[0].x.length; }""")


def test_the_heatmap_labels_every_key_and_query_at_45_tokens(attention_45):
    heatmap = chart(attention_45, "encoder, layer 0, head 0")
    count = token_count(attention_45)
    assert count >= 45
    keys, queries = tick_texts(heatmap, "x"), tick_texts(heatmap, "y")
    assert len(keys) == count and len(queries) == count        # on main: every 2nd key only
    assert {f"{count - 1} </s>", "44 ▁near"} <= set(keys) & set(queries)
    assert overlapping(boxes(heatmap.locator(".ytick text"))) == []


def test_the_colour_scale_says_which_it_is_and_can_follow_the_figure(context, app_url, attention_45):
    absolute = chart(attention_45, "encoder, layer 0, head 0")
    assert "0–1" in absolute.locator(".cbtitle").text_content()
    page = open_view(context, app_url, "attention", model="h8", sentence=WORDS_45, scale="per-figure")
    try:
        per_figure = chart(page, "encoder, layer 0, head 0")
        assert "this figure" in per_figure.locator(".cbtitle").text_content()
        # the darkest colour is the figure's own largest weight, not 1
        top = page.evaluate("() => document.querySelector('.js-plotly-plot')._fullData[0].zmax")
        largest = page.evaluate("() => Math.max(...document.querySelector('.js-plotly-plot').calcdata[0][0].z"
                                ".map(row => Math.max(...row)))")
        assert top == pytest.approx(largest) and top < 1
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


def test_scores_mask_softmax_labels_every_key_and_has_colour_bars(internals_45):
    open_tab(internals_45, "Scores → softmax")
    figure = chart(internals_45, "the model's real numbers")
    keys = figure.locator(".xtick text").count()
    assert keys >= 30                                   # the decoder's tokens: the German output, 30-odd pieces
    for axis in ("x2", "x3", "x4"):                     # every panel labels every key (on main: every 3rd)
        assert figure.locator(f".{axis}tick text").count() == keys
    assert figure.locator(".colorbar").count() == 2     # scores and weights; on main: none
    assert overlapping(boxes(figure.locator(".g-xtitle, .annotation-text"))) == []


def test_a_long_sentence_still_gets_its_padding_mask(internals_45):
    open_tab(internals_45, "Masks")
    figure = chart(internals_45, "Padding mask of a batch")     # on main: gone above ~20 words
    assert "shorter sentence padded to your sentence" in figure.locator(".gtitle").text_content()
    assert figure.locator(".ytick text").count() == 2


def test_the_walkthrough_opens_on_a_word_and_says_its_scaling_plainly(internals_45):
    open_tab(internals_45, "Q, K, V walkthrough")
    query = internals_45.get_by_label("Query token").first.input_value()
    label = query.split(":", 1)[1].strip()
    assert any(character.isalnum() for character in label), query      # on main: "13: ▁"
    figure = chart(internals_45, "scores over the keys")
    titles = " ".join(figure.locator(".annotation-text").all_text_contents())
    assert "√d_k (√32 = 5.66)" in titles and "= ÷" not in titles


def test_compare_keeps_every_heatmap_cell_readable_at_45_tokens(context, app_url):
    page = open_view(context, app_url, "compare", model="h8", sentence=WORDS_45)
    try:
        images = page.locator('[data-testid="stPlotlyChart"] .heatmaplayer image')
        page.wait_for_function("n => document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .heatmaplayer image')"
                               ".length === n", arg=1 + 8 + 1 + 2)  # the focus rows, every head of the three models
        widths = [box["right"] - box["left"] for box in boxes(images)]
        assert min(widths) / 49 >= 12                   # ≥ 12 px a key (on main: 40–70 px for all 49 keys)
        titles = boxes(page.locator('[data-testid="stPlotlyChart"] .annotation-text'))
        assert overlapping(titles) == []                # on main: "head Bead 1"
    finally:
        page.close()


def test_the_prune_diff_wraps_and_the_curve_legend_keeps_off_its_title(context, app_url):
    page = open_view(context, app_url, "prune", model="h8", sentence=WORDS_20, pruned="cross.2.*")
    try:
        diff = page.locator('[data-testid="stHtml"] div').first
        assert diff.locator("span").count() > 10
        width = diff.evaluate("d => [d.scrollWidth, d.parentElement.clientWidth]")
        assert width[0] <= width[1]                     # on main: 1,534 px in a 940 px column
        curve = chart(page, "Pruning curve")
        legend, title = boxes(curve.locator(".legend")), boxes(curve.locator(".gtitle"))
        assert overlapping(legend + title) == []        # on main: the legend over the subtitle
    finally:
        page.close()


def test_the_token_table_shows_every_token_without_a_scroll_box(context, app_url):
    page = open_view(context, app_url, "translation", model="h8", sentence=WORDS_45)
    try:
        table = page.locator('[data-testid="stDataFrame"]').first
        rows = 49                                       # the 45 words' pieces and </s>
        assert table.evaluate("t => t.getBoundingClientRect().height") >= 35 * (rows + 1)   # on main: 10 rows
    finally:
        page.close()
