"""The Decoding page's numbers and figures: no beam (and no greedy step of ours) continues with a special token
other than the end token, for every family; the beam tree's labels fit their columns; every token axis labels
every token; small probabilities and head effects are printed with significant digits, never as 0.000."""

import html
import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from explorer.capture.decoding_steps import TeacherForcing, beam_tree
from explorer.capture.trace import StepDistribution
from explorer.figures.candidates import BAR, CHOSEN, candidates_table, candidates_width
from explorer.figures.common import NARROW_WIDTH, PANEL_LABELS, cell_size, dense_cell, label_font
from explorer.figures.decoding import (
    CHAR_WIDTH,
    COLUMN_GAP,
    HALF_COLUMN,
    TEXT_OFFSET,
    attention_row_described,
    beam_font,
    beam_tree_figure,
    head_effect_figure,
    label_chars,
    nats_scale,
    plotly_bars,
    probability_text,
    steps_described,
    teacher_forcing_figure,
)
from explorer.models.decoding import BeamResult, BeamStep, Hypothesis, search_beams
from explorer.models.generation import beam_search
from explorer.models.loader import open_model
from explorer.models.tokenizer import BOS, PAD
from tests.conftest import SENTENCES
from tests.hugging_face_models import GENERATES, SENTENCE, TEXT, saved_model

FORTY_FIVE_WORDS = ("A young boy in a red shirt is jumping into a swimming pool while his friends watch from the side "
                    "and an old man with a grey hat sits on a wooden bench reading a newspaper under a large green "
                    "umbrella near the water.")


# -- the search --

def favouring(*ids: int, vocab: int = 6):
    """next_log_probs of a model that likes `ids` best, in that order, at every step."""
    def next_log_probs(last: torch.Tensor, histories: list[list[int]]) -> torch.Tensor:
        logits = torch.zeros(len(histories), vocab)
        for rank, token in enumerate(ids):
            logits[:, token] = 10.0 - rank
        return torch.log_softmax(logits, -1)
    return next_log_probs


def never_next(model) -> set[int]:
    """The ids no hypothesis may continue with: every special token but the end token."""
    return {i for i in model.special_ids | {model.pad_id, model.start_id} if i is not None} - {model.end_id}


def tokens_of(result: BeamResult) -> set[int]:
    return {t for step in result.steps for t in step.tokens} | {t for h in result.finished for t in h.tokens}


def test_no_hypothesis_continues_with_the_start_token_or_the_excluded_ones():
    start, end, pad = 0, 1, 2
    model = favouring(start, pad, 3, 4, end)
    result = search_beams(model, lambda parents: None, start, end, beam_size=3, alpha=0.0, max_steps=4,
                          exclude=[pad])
    assert tokens_of(result) and not tokens_of(result) & {start, pad}
    # Scores stay the model's own log-probabilities: not renormalised over what is left.
    first = model(torch.tensor([[start]]), [[]])[0]
    assert result.steps[0].log_probs[0] == pytest.approx(float(first[3]))
    assert 3 in tokens_of(search_beams(model, lambda parents: None, start, end, 3, 0.0, 4))


def test_the_end_token_stays_a_candidate_when_a_model_starts_from_it():
    """BART and GPT-2 start their decoder from their end token: it still finishes hypotheses."""
    result = search_beams(favouring(1, 2, 3), lambda parents: None, 1, 1, beam_size=2, alpha=0.0, max_steps=5,
                          exclude=[1, 2])
    assert result.best.ended and result.best.tokens == []


@pytest.mark.slow
def test_our_beam_search_and_greedy_never_take_bos_or_padding(tiny_checkpoint):
    """An untrained model would choose BOS over and over; a beam of one is still greedy."""
    for sentence in SENTENCES:
        ids = tiny_checkpoint.tokenizer.encode(sentence).ids
        result = beam_search(tiny_checkpoint, ids, 4, 0.6)
        assert not tokens_of(result) & {BOS, PAD}
        greedy = tiny_checkpoint.generate([ids])[0]
        assert greedy and not set(greedy) & {BOS, PAD}
        assert beam_search(tiny_checkpoint, ids, 1, 0.6).best.tokens == greedy


@pytest.mark.slow
@pytest.mark.parametrize("beam", [4, 10])
def test_the_bundled_models_beam_tree_has_no_special_token(h8, beam):
    result = beam_tree(h8, FORTY_FIVE_WORDS, beam, 0.6)          # h8 once continued with <s> here at beam 10
    assert result.steps and not tokens_of(result) & never_next(h8)


@pytest.fixture(scope="module", params=GENERATES)
def hugging_face_model(request, tmp_path_factory):
    return open_model(saved_model(request.param, tmp_path_factory))


@pytest.mark.slow
def test_no_family_s_beam_tree_takes_a_special_token(hugging_face_model):
    """Tiny random models choose padding, <s>, <unk> or a language tag often (T5 its padding, its start token): the
    tree never does, and each step's kept log-probabilities are still the model's own, best first."""
    model = hugging_face_model
    banned = never_next(model)
    assert model.end_id not in banned
    assert {model.start_id, model.pad_id} - {model.end_id} <= banned     # T5: padding is its start token
    for sentence in [SENTENCE] + TEXT[:3]:
        result = beam_tree(model, sentence, 5, 0.6)
        assert result.finished and not tokens_of(result) & banned
        for step in result.steps:
            assert step.log_probs == sorted(step.log_probs, reverse=True)


# -- the figures --

def distribution(probs: list[float], chosen: int = 0) -> StepDistribution:
    tokens = [f"▁t{i}" for i in range(len(probs))]
    entropy = float(-sum(p * math.log(p) for p in probs if p > 0))
    return StepDistribution(tokens[chosen], chosen, probs[chosen], entropy, list(range(len(probs))), tokens, probs)


def test_a_small_probability_never_reads_zero():
    assert [probability_text(p) for p in (0.932, 0.0123, 0.006, 0.00035, 0.0, 1.0)] == \
        ["0.932", "0.012", "0.006", "0.00035", "0.000", "1.000"]
    for p in (0.0004, 0.00049, 1e-6, 0.0009):
        assert float(probability_text(p)) != 0 and probability_text(p) != "0.000"
    table = candidates_table(distribution([0.99, 0.0096, 0.0004]), 3)
    assert [written for _, written in candidate_rows(table)] == ["0.990", "0.0096", "0.0004"]
    assert "p = 0.990" in table


def candidate_rows(table: str) -> list[tuple[str, str]]:
    """(token, probability as written) of each row of a candidates table, best first."""
    return [(html.unescape(token), written) for token, written in
            re.findall(r'<tr data-rank="\d+"[^>]*><td[^>]*>([^<]*)</td><td[^>]*><div[^>]*></div></td><td[^>]*>([^<]*)'
                       r'</td></tr>', table)]


def test_the_candidates_are_ranked_with_bars_as_long_as_their_probabilities_and_the_chosen_in_red():
    step = distribution([0.6, 0.3, 0.1], chosen=1)                  # a beam can keep the second best
    table = candidates_table(step, 2)
    assert [token for token, _ in candidate_rows(table)] == ["▁t0", "▁t1", "▁t2"]
    widths = [int(w) for w in re.findall(r'<div style="width: (\d+)px; height', table)]
    assert widths == [round(BAR * p) for p in (0.6, 0.3, 0.1)]
    assert re.findall(r'data-chosen="(\w+)"', table) == ["false", "true", "false"]
    chosen_row = re.search(r'<tr data-rank="1".*?</tr>', table).group(0)
    assert f"background: {CHOSEN}" in chosen_row and table.count(f"background: {CHOSEN}") == 1
    assert "step 2: chose ▁t1" in table
    # Ten German pieces, the longest 14 characters: the list fits half a projector's column, beside the attention.
    pieces = ["▁Schwimmbecken", "▁Junge", "▁Der", "▁Ein", "▁kleiner", "▁spielt", "▁im", "▁Wasser", ".", "</s>"]
    german = StepDistribution(pieces[0], 0, 0.5, 1.0, list(range(10)), pieces, [0.5] + [0.0555] * 9)
    assert candidates_width(german) <= HALF_COLUMN
    hostile = StepDistribution("<b>x</b>", 0, 0.9, 0.1, [0], ["<b>x</b>"], [0.9])
    assert "<b>x" not in candidates_table(hostile, 0) and "&lt;b&gt;x&lt;/b&gt;" in candidates_table(hostile, 0)


def entropy_ticks(axis) -> list[float]:
    """The tick values an axis with tickmode "linear" draws over its range."""
    low, high = axis.range
    return [axis.tick0 + i * axis.dtick for i in range(int(round((high - axis.tick0) / axis.dtick)) + 1)
            if low <= axis.tick0 + i * axis.dtick <= high]


def test_the_entropy_axis_ticks_at_round_values():
    """Laid over the probability axis, plotly synced the entropy ticks to its grid: 1.16, 2.32, 3.47 … for a top
    entropy of 5.79. Its own ticks now: whole nats (halves for a low entropy, twos for a high one), from 0 to past
    the highest step."""
    highest = 5.4
    steps = [distribution([0.6, 0.3, 0.1]) for _ in range(4)]
    steps[2] = StepDistribution("a", 0, 0.1, highest, [0], ["a"], [0.1])
    axis = plotly_bars(steps_described(steps)).layout.yaxis2       # entropy's row, under the probabilities'
    assert axis.tickmode == "linear" and axis.overlaying is None and axis.domain[1] < 1
    assert entropy_ticks(axis) == [0, 1, 2, 3, 4, 5, 6]
    for top, ticks in ((0.9, [0, 0.5, 1.0]), (2.2, [0, 0.5, 1.0, 1.5, 2.0, 2.5]), (8.99, [0, 2, 4, 6, 8, 10]),
                       (0.0, [0, 0.5])):
        step, highest = nats_scale([top])
        found = go.layout.YAxis(range=[0, highest], tickmode="linear", tick0=0, dtick=step)
        assert entropy_ticks(found) == ticks and found.range[1] >= top, (top, entropy_ticks(found))


def test_titles_keep_their_details_on_lines_of_their_own():
    """A title line short enough for a figure half a 1024 px window's column wide, its numbers in lines under it:
    on one line they ran past the figure's right edge."""
    step = distribution([0.502, 0.393, 0.105])
    table = candidates_table(step, 0)
    assert "step 0: chose ▁t0</div>" in table and f">p = 0.502, entropy {step.entropy:.2f} nats</div>" in table
    row = plotly_bars(attention_row_described(np.full(3, 1 / 3), ["a", "b", "c"], "step 0: where it looked",
                                              ["self-attention over the text so far", "layer 2, head average"]))
    lines = row.layout.title.text.split("<br>")
    assert lines == ["step 0: where it looked", "<sup>self-attention over the text so far</sup>",
                     "<sup>layer 2, head average</sup>"]
    assert all(len(line.removeprefix("<sup>").removesuffix("</sup>")) <= 40 for line in lines)


def test_the_head_effect_map_prints_significant_digits():
    effect = np.array([[0.0005, 0.0012, 0.002, 0.25], [1.5, 0.0, 0.00071, 0.03]])
    figure = head_effect_figure(effect, "Heads behind predicting “dog”")
    text = [cell for row in figure.data[0].text for cell in row]
    assert text == ["0.0005", "0.0012", "0.002", "0.25", "1.5", "0", "0.00071", "0.03"]
    assert all(cell != "0.00" for cell in text) and figure.data[0].texttemplate == "%{text}"
    assert list(figure.data[0].x) == [f"head {h}" for h in range(4)]
    assert list(figure.data[0].y) == ["layer 0", "layer 1"]


def tick_axis(figure: go.Figure) -> dict:
    axis = figure.layout.xaxis
    return dict(tickmode=axis.tickmode, dtick=axis.dtick, size=axis.tickfont.size, angle=axis.tickangle)


@pytest.mark.parametrize("count", [5, 20, 45, 83])
def test_token_bars_label_every_token_in_room_made_for_them(count):
    tokens = [f"▁Wort{i}" for i in range(count)]
    steps = [distribution([0.6, 0.3, 0.1]) for _ in range(count)]
    forced = TeacherForcing(tokens, [0.5] * count, [1] * count, 0.7)
    for figure in (plotly_bars(steps_described(steps)),
                   plotly_bars(attention_row_described(np.full(count, 1 / count), tokens, "t")),
                   teacher_forcing_figure(forced)):
        axis = tick_axis(figure)
        if count * dense_cell() > NARROW_WIDTH - PANEL_LABELS:
            # More bars than a projector's column labels one by one (45 bars would be 630 px): the column's
            # width, a label every few bars (at most one each 16 px of its 430), every one once zoomed in;
            # every bar drawn.
            assert axis["tickmode"] == "auto" and figure.layout.width is None
            assert figure.layout.xaxis.nticks == (NARROW_WIDTH - PANEL_LABELS) // 16
            assert len(figure.data[0].x) == count and "zoom in" in figure.layout.title.text
            continue
        assert axis["tickmode"] == "linear" and axis["dtick"] == 1 and axis["size"] == label_font(count)
        assert axis["angle"] is None                # horizontal where they fit, upright where not: never slanted
        assert list(figure.layout.xaxis.autotickangles) == [0, -90]
        assert cell_size(count) >= label_font(count) + 3 and label_font(count) >= 11
        assert figure.layout.width is None and count * cell_size(count) <= 560     # stretched, a cell a token
        assert figure.layout.height >= 300


def fake_tree(steps: int, beam: int, piece: str) -> tuple[BeamResult, callable]:
    """A beam result with `beam` live beams a step, every token spelled `piece` + its id."""
    tokens = [[100 * s + r for r in range(beam)] for s in range(steps)]
    # Step 0's beams all extend the root; later, each rank extends the same rank: rank 0 is the best hypothesis.
    tree = [BeamStep(row, [0] * beam if s == 0 else list(range(beam)), [-0.1 * (r + 1) * (s + 1) for r in range(beam)])
            for s, row in enumerate(tokens)]
    best = Hypothesis([row[0] for row in tokens], -1.0, -1.0)
    return BeamResult(best, [best], tree), lambda ids: [f"{piece}{i}" for i in ids]


@pytest.mark.parametrize("beam", [2, 5, 10])
def test_beam_tree_labels_fit_their_columns(beam):
    result, pieces = fake_tree(30, beam, "▁Donaudampfschifffahrtsgesellschaft")
    figure = beam_tree_figure(result, pieces)
    nodes = figure.data[-1]
    chars = label_chars(beam, beam_font(beam))
    assert all(len(label) <= chars for label in nodes.text)
    assert any(label.endswith("…") for label in nodes.text)              # cut, and the hover has it whole
    assert all("▁Donaudampfschifffahrtsgesellschaft" in hover for hover in nodes.hovertext[1:])
    assert "<s>" not in nodes.text
    # A rank's column holds its longest label at the font, with a gap before the next rank's dot.
    plot_width = figure.layout.width - figure.layout.margin.l - figure.layout.margin.r
    longest = max(len(label) for label in nodes.text)
    assert plot_width / beam >= TEXT_OFFSET + CHAR_WIDTH * beam_font(beam) * longest + COLUMN_GAP - 1
    assert figure.layout.width <= 940                                       # a 1400 px window's main column
    # A row per step, a band under each for the links.
    assert figure.layout.height >= 30 * 31
    # The best hypothesis is drawn in red from the root down.
    assert nodes.marker.color[0] == "crimson" and nodes.marker.color[1] == "crimson"


@pytest.mark.parametrize("beam", [2, 5, 10])
def test_in_projector_mode_the_beam_tree_fits_the_folded_column_with_its_labels_scaled_up(beam):
    from explorer.figures.common import FIGURE_SCALE, PROJECTOR_COLUMN, PROJECTOR_SCALE, text_width, title_height

    result, pieces = fake_tree(12, beam, "▁Donaudampfschifffahrtsgesellschaft")
    plain = beam_tree_figure(result, pieces)
    token = FIGURE_SCALE.set(PROJECTOR_SCALE)
    try:
        figure = beam_tree_figure(result, pieces)
    finally:
        FIGURE_SCALE.reset(token)
    nodes = figure.data[-1]
    assert nodes.textfont.size == round(plain.data[-1].textfont.size * PROJECTOR_SCALE)       # 14 or 13 px
    assert figure.layout.width <= PROJECTOR_COLUMN                  # whole in a 1024 px projector's column
    # every title line fits the figure (plotly cuts what runs past its edge) and the plot starts under all of them
    for line in figure.layout.title.text.split("<br>"):
        small = line.startswith("<sup>")
        text = line.removeprefix("<sup>").removesuffix("</sup>")
        assert text_width(text, 17 * (0.7 if small else 1.0)) <= figure.layout.width - 20
    assert figure.layout.margin.t >= title_height(figure.layout.title.text) + 2 * 12
    assert figure.layout.xaxis.title.font.size == 16 and figure.layout.yaxis.title.font.size == 16
    plot_width = figure.layout.width - figure.layout.margin.l - figure.layout.margin.r
    longest = max(len(label) for label in nodes.text)
    assert plot_width / beam >= TEXT_OFFSET + CHAR_WIDTH * nodes.textfont.size * longest + COLUMN_GAP - 1


@pytest.mark.slow
def test_beam_tree_links_stay_out_of_the_label_rows(h8):
    result = beam_tree(h8, FORTY_FIVE_WORDS, 10, 0.6)
    figure = beam_tree_figure(result, h8.pieces)
    for trace in figure.data[:2]:
        ys = [y for y in trace.y if y is not None]
        # a link's turning points lie at least 9 px (of a 30 px row) from a row's labels
        for y in ys:
            offset = abs(y - round(y))
            assert offset == 0 or offset >= 0.29


# -- the page --

def test_the_page_opens_on_the_choices_the_session_holds():
    """The step, layer, head, beam size and α come from st.session_state when it holds them (a link, the last
    visit); a choice the sentence or model no longer offers falls back to the default."""
    from tests.app.conftest import open_page, open_part

    at = open_page("decoding.py", "Two dogs play in the snow.", decoding_step=2, decoding_layer=0, decoding_head=1,
                   decoding_beam=3, decoding_alpha=1.2)
    assert at.slider(key="decoding_step").value == 2
    assert (at.selectbox(key="decoding_layer").value, at.selectbox(key="decoding_head").value) == (0, 1)
    [looked] = [block.proto.body for block in at.get("html") if 'class="step-attention"' in block.proto.body]
    assert "step 2: where it looked" in looked and "cross-attention · layer 0, head 1" in looked
    assert not at.warning or all("Session State" not in w.value for w in at.warning)
    open_part(at, "Beam search", "decoding_part")               # the beam's sliders are on their own tab
    assert (at.slider(key="decoding_beam").value, at.slider(key="decoding_alpha").value) == (3, 1.2)
    stale = open_page("decoding.py", "Two dogs play in the snow.", decoding_step=400, decoding_layer=99,
                      decoding_beam=40)
    layer = stale.selectbox(key="decoding_layer")
    assert stale.slider(key="decoding_step").value == 0 and layer.value == int(layer.options[-1])    # the last
    assert open_part(stale, "Beam search", "decoding_part").slider(key="decoding_beam").value == 5
