"""The Decoding page in Debian's Chromium, opened by URL: the beam tree offers no special token and its labels never
run into each other, and at 45 words every step and every source token has its own tick label, none on another."""

from urllib.parse import quote

import pytest

from tests.browser.harness import wait_idle


SHORT = "A dog runs."
THIRTY_WORDS = ("A man in a blue shirt and a woman with a red umbrella walk past a small shop while two children "
                "play with a brown dog on the wet street.")
FORTY_FIVE_WORDS = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side "
                    "and an old man with a grey hat sits on a wooden bench reading a newspaper under a large green "
                    "umbrella near the water.")

# The texts (or labels) and boxes of one chart, found by the start of its title.
CHART_BOXES = """([title, selector]) => {
    const plot = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => (p.querySelector('.gtitle')?.textContent || '').startsWith(title));
    if (!plot) return null;
    return {
        x: plot.data[0].x ? plot.data[0].x.length : 0,
        items: [...plot.querySelectorAll(selector)].map(e => {
            const r = e.getBoundingClientRect();
            return {text: e.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
        }),
    };
}"""


# Each tab of the Decoding page is drawn only when open; a link names it (`decoding_part=`). A chart each tab draws:
DRAWS = {"Step by step": "step 0: where it looked", "Beam search": "Beam search"}


def open_decoding(context, app_url, sentence: str, model: str = "h8", beam: int | None = None,
                  part: str = "Step by step"):
    """The Decoding page of a link, on one of its tabs, once every chart on it is drawn."""
    page = context.new_page()
    page.goto(f"{app_url}/decoding?model={model}&sentence={quote(sentence)}&decoding_part={quote(part)}"
              + (f"&beam={beam}" if beam else ""))
    page.locator(".js-plotly-plot .gtitle", has_text=DRAWS[part]).wait_for(timeout=120_000)
    wait_idle(page, timeout=120_000)
    return page


def chart(page, title: str, selector: str) -> dict:
    found = page.evaluate(CHART_BOXES, [title, selector])
    assert found is not None, f"no chart titled {title!r}"
    return found


def overlapping(boxes: list[dict], slack: float = 0.5) -> list[tuple[str, str]]:
    """The pairs of boxes that overlap (by more than `slack` px both ways)."""
    pairs = []
    ordered = sorted(boxes, key=lambda b: b["left"])
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b["left"] >= a["right"] - slack:
                break
            if min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > slack:
                pairs.append((a["text"], b["text"]))
    return pairs


def test_the_beam_tree_offers_no_start_token_or_padding(context, app_url):
    """At beam 10 the 2-head model's beams once continued with <s> (step 1, rank 8): no beam takes a special token
    now, and the root is named as the decoder's start."""
    for model, sentence in (("h2", FORTY_FIVE_WORDS),):       # h8: tests/explorer/test_decoding_figures.py
        page = open_decoding(context, app_url, sentence, model, beam=10, part="Beam search")
        labels = [item["text"] for item in chart(page, "Beam search", ".textpoint text")["items"]]
        assert len(labels) > 100                                        # 10 beams, many steps
        assert not {"<s>", "<pad>", "<unk>"} & set(labels[1:]), (model, sorted(set(labels[1:]))[:20])
        assert "<s>" not in labels
        assert context.blocked == []
        page.close()


def test_beam_tree_labels_never_overlap(context, app_url):
    """A 30-word sentence at beam 10: no label runs into another (the next rank's column) or onto a beam's dot."""
    page = open_decoding(context, app_url, THIRTY_WORDS, "h2", beam=10, part="Beam search")
    tree = chart(page, "Beam search", ".textpoint text")
    labels = tree["items"]
    assert len(labels) > 150
    assert [label["text"] for label in labels if label["right"] <= label["left"]] == []    # each one drawn
    assert overlapping(labels) == []
    dots = chart(page, "Beam search", ".scatterlayer .point")["items"]
    assert len(dots) == len(labels)
    assert overlapping(labels + dots) == []                             # nor onto a dot, its own or another's
    # Every label stays inside the figure (the last rank's too).
    box = page.locator(".js-plotly-plot", has=page.locator(".gtitle", has_text="Beam search")).bounding_box()
    assert max(label["right"] for label in labels) <= box["x"] + box["width"]


@pytest.fixture(scope="module")
def decoding_45(warm_context, app_url):
    """The Decoding page of the 45-word sentence, read (never changed) by the tests that take it."""
    page = open_decoding(warm_context, app_url, FORTY_FIVE_WORDS)
    yield page
    page.close()
    assert warm_context.blocked == []


@pytest.mark.parametrize("title, what", [("Every step", "steps"), ("step 0: where it looked", "source tokens")])
def test_the_tick_labels_at_45_words_are_thinned_evenly_and_zoom_to_every_one(decoding_45, title, what):
    """The steps overview and the cross-attention bars of a 45-word sentence: more bars than a projector's column
    labels one by one, so a label every other bar or so, evenly, none on another, every one once zoomed in."""
    page = decoding_45
    ticks = chart(page, title, ".xtick text")
    assert ticks["x"] >= 35, what                                       # 49 source tokens, ~40 steps
    shown = len(ticks["items"])
    assert ticks["x"] // 3 <= shown < ticks["x"], f"{shown} of {ticks['x']} {what} labelled"
    assert overlapping(ticks["items"]) == []
    figure = page.locator(".js-plotly-plot", has=page.locator(".gtitle", has_text=title)).first
    assert "zoom in and read" in figure.locator(".gtitle").text_content()      # lines join with no space
    assert all(tick["bottom"] - tick["top"] >= 8 for tick in ticks["items"])    # upright, in a readable font


def test_a_short_sentence_keeps_its_labels_too(context, app_url):
    page = open_decoding(context, app_url, SHORT)
    for title in ("Every step", "step 0: where it looked"):
        ticks = chart(page, title, ".xtick text")
        assert len(ticks["items"]) == ticks["x"] and overlapping(ticks["items"]) == []
    page.close()
    page = open_decoding(context, app_url, SHORT, part="Beam search")
    assert overlapping(chart(page, "Beam search", ".textpoint text")["items"]) == []
    page.close()
