"""The Decoding page in Debian's Chromium, opened by URL: the beam tree offers no special token and its labels never
run into each other, and at 45 words every step and every source token has its own label, none on another, all in
the page's column."""

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


# Each tab of the Decoding page is drawn only when open; a link names it (`decoding_part=`). A figure each tab draws:
# where step 0 looked (HTML bars: explorer/figures/token_bars.py), the beam tree (plotly).
DRAWS = {"Step by step": ".step-attention .bar", "Beam search": ".js-plotly-plot .gtitle >> text=Beam search"}


def open_decoding(context, app_url, sentence: str, model: str = "h8", beam: int | None = None,
                  part: str = "Step by step"):
    """The Decoding page of a link, on one of its tabs, once every chart on it is drawn."""
    page = context.new_page()
    page.goto(f"{app_url}/decoding?model={model}&sentence={quote(sentence)}&decoding_part={quote(part)}"
              + (f"&beam={beam}" if beam else ""))
    page.locator(DRAWS[part]).first.wait_for(timeout=120_000)
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


# Where each label and bar of a figure of bars (explorer/figures/token_bars.py) is drawn, by the figure's class.
BARS = """name => {
    const figure = document.querySelector('.' + name);
    const box = e => { const r = e.getBoundingClientRect();
                       return {text: e.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    const main = document.querySelector('[data-testid="stMainBlockContainer"]').getBoundingClientRect();
    return {labels: [...figure.querySelectorAll('.bar-label')].map(box), bars: [...figure.querySelectorAll('.bar')].map(box),
            size: Math.min(...[...figure.querySelectorAll('.bar-label')].map(l => parseFloat(getComputedStyle(l).fontSize))),
            modes: [...new Set([...figure.querySelectorAll('.bar-label')].map(l => getComputedStyle(l).writingMode))],
            right: main.right};
}"""


def assert_every_label_drawn(page, name: str, count: int) -> None:
    """Every one of `count` columns labelled, upright, at 11 px or more, none on another label or a bar, and all
    of them in the page's column (a long sentence's columns wrap onto a new line)."""
    drawn = page.evaluate(BARS, name)
    assert len(drawn["labels"]) == count and drawn["size"] >= 11, (name, len(drawn["labels"]))
    assert drawn["modes"] == ["vertical-rl"]                            # upright
    assert overlapping(drawn["labels"]) == [] and overlapping(drawn["labels"] + drawn["bars"]) == []
    assert max(item["right"] for item in drawn["labels"] + drawn["bars"]) <= drawn["right"]


@pytest.mark.parametrize("name, what", [("decoding-steps", "steps"), ("step-attention", "source tokens")])
def test_every_label_at_45_words_is_drawn_in_the_column(decoding_45, name, what):
    """The steps overview and the cross-attention bars of a 45-word sentence: more bars than a projector's column
    holds on one line, so they wrap, every one labelled (a plotly chart labelled every other one), none on
    another."""
    count = decoding_45.locator(f".{name} .token-column").count()
    assert count >= 35, what                                            # 49 source tokens, ~35 steps
    assert_every_label_drawn(decoding_45, name, count)


def test_a_short_sentence_keeps_its_labels_too(context, app_url):
    page = open_decoding(context, app_url, SHORT)
    for name in ("decoding-steps", "step-attention"):
        assert_every_label_drawn(page, name, page.locator(f".{name} .token-column").count())
    page.close()
    page = open_decoding(context, app_url, SHORT, part="Beam search")
    assert overlapping(chart(page, "Beam search", ".textpoint text")["items"]) == []
    page.close()
