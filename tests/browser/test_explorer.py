"""The explorer in Debian's Chromium, offline: translation, heatmaps, bertviz, hostile text, two sessions."""

import pytest

from explorer.translation import translate
from tests.browser.harness import go_to, offline_context, submit_sentence, wait_idle

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture
def context(browser):
    context = offline_context(browser)
    yield context
    context.close()


def open_app(context, url):
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs
    page.goto(url)
    page.get_by_label("English sentence").wait_for(timeout=60_000)
    wait_idle(page)
    return page


def translation_text(page) -> str:
    return page.locator('[data-testid="stText"]').first.inner_text(timeout=30_000)


def test_sentence_to_translation_heatmap_and_bertviz(context, app_url, h8):
    page = open_app(context, app_url)
    sentence = "A little girl is climbing the stairs."
    submit_sentence(page, sentence)
    expected = translate(h8, [sentence])[0]
    page.wait_for_function("t => [...document.querySelectorAll('[data-testid=\"stText\"]')].some(e => e.innerText === t)",
                           arg=expected, timeout=60_000)
    go_to(page, "Attention")
    page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 4
    assert "girl" in page.locator(".js-plotly-plot").first.inner_text() or page.locator(".xtick text").count() > 5
    frame = page.frame_locator("iframe").first
    frame.locator("svg text").first.wait_for(timeout=30_000)
    assert frame.locator("svg text").count() > len(sentence.split())
    assert context.blocked == []


def test_hostile_sentence_runs_nothing(context, app_url):
    page = open_app(context, app_url)
    submit_sentence(page, HOSTILE)
    wait_idle(page)
    go_to(page, "Attention")
    page.frame_locator("iframe").first.locator("svg text").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)  # give any injected script the chance to fire
    for title in ("Internals", "Decoding"):
        go_to(page, title)
        wait_idle(page)
    assert page.dialogs == []
    assert page.locator("img[src=x]").count() == 0
    assert context.blocked == []


def test_two_sessions_keep_their_own_sentences(browser, app_url, h8):
    first, second = offline_context(browser), offline_context(browser)
    try:
        one, two = open_app(first, app_url), open_app(second, app_url)
        sentences = ["Two dogs play in the snow.", "A woman is singing on a stage."]
        submit_sentence(one, sentences[0])
        submit_sentence(two, sentences[1])
        expected = translate(h8, sentences)
        for page, text in zip((one, two), expected):
            page.wait_for_function(
                "t => [...document.querySelectorAll('[data-testid=\"stText\"]')].some(e => e.innerText === t)",
                arg=text, timeout=60_000)
        # More runs in each session (page changes) keep each on its own sentence.
        go_to(one, "Attention")
        go_to(two, "Decoding")
        wait_idle(one), wait_idle(two)
        go_to(one, "Translation")
        wait_idle(one)
        assert one.get_by_label("English sentence").input_value() == sentences[0]
        assert two.get_by_label("English sentence").input_value() == sentences[1]
        assert translation_text(one) == expected[0]
    finally:
        first.close()
        second.close()


def test_pruning_a_head_updates_the_translation(context, app_url, h8):
    from explorer.heads import all_heads

    sentence = "A man in a blue shirt is riding a bicycle down the street."
    unpruned = translate(h8, [sentence])[0]
    spec = next(s for s in all_heads(h8.model.config) if translate(h8, [sentence], pruned=[s])[0] != unpruned)
    expected = translate(h8, [sentence], pruned=[spec])[0]
    page = open_app(context, app_url)
    submit_sentence(page, sentence)
    wait_idle(page)
    go_to(page, "Prune")
    page.get_by_text(str(spec), exact=True).wait_for(timeout=60_000)
    wait_idle(page)
    page.get_by_text(str(spec), exact=True).click()
    page.wait_for_function("t => [...document.querySelectorAll('[data-testid=\"stText\"]')].some(e => e.innerText === t)",
                           arg=expected, timeout=60_000)
    assert page.locator('span[style*="line-through"]').count() + page.locator('span[style*="d9f0d3"]').count() > 0
    assert page.dialogs == [] and context.blocked == []
