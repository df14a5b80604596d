"""The Lesson's steps: each number a step states equals the trace's, recomputed here from the captured arrays and
the model's own weights; the steps a model gets follow from what it can do (every family); what differs from the
paper is said for the bundled model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.capture.trace import trace_sentence
from explorer.models.loader import open_model
from explorer.teaching.lesson import Lesson
from explorer.teaching.lesson_steps import TITLES, Focus
from tests.hugging_face_models import saved_model

SENTENCE = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def lecture(h8):
    trace = trace_sentence(h8, SENTENCE)
    return Lesson(h8, trace), trace


def numbers(step) -> dict:
    return {number.name: number.value for number in step.numbers}


@pytest.mark.slow
def test_the_lesson_opens_on_the_pronoun_and_walks_every_step(lecture):
    lesson, trace = lecture
    focus = lesson.default_focus()
    assert lesson.words[focus.word] == "▁it"                   # the lecture's question
    assert lesson.slugs == [slug for slug in TITLES if slug not in ("image", "classify")]   # a translator: all 14 steps
    for slug in lesson.slugs:
        step = lesson.step(slug, focus)
        assert step.text and step.numbers and (step.figure is not None or step.tokens), slug
        assert step.link is not None and step.link.page.endswith(".py"), slug


@pytest.mark.parametrize("word, layer, head, step", [(12, 2, 0, 13), (3, 0, 5, 2), (19, 1, 7, 0)])
def test_every_number_equals_the_trace_recomputed(lecture, h8, word, layer, head, step):
    lesson, trace = lecture
    focus = Focus(word, -1, layer, head, step)
    values = trace.attention["encoder"]
    q, k, v = values.value("q")[layer, head, word], values.value("k")[layer, head], values.value("v")[layer, head]
    scores = k @ q
    weights = np.exp(scores / np.sqrt(h8.d_k) - (scores / np.sqrt(h8.d_k)).max())
    weights /= weights.sum()
    key = int(np.argmax(values.pattern[layer, head, word]))

    got = numbers(lesson.step("scores", focus))
    assert got["key"] == trace.source_tokens[key] and np.isclose(got["score"], scores[key], rtol=1e-5)
    got = numbers(lesson.step("scale", focus))
    assert np.isclose(got["scaled"], values.value("scores")[layer, head, word, key], rtol=1e-4, atol=1e-5)
    assert np.isclose(got["scaling"], 1 / np.sqrt(32))
    got = numbers(lesson.step("softmax", focus))
    assert np.isclose(got["weight"], values.pattern[layer, head, word, key], atol=1e-5)
    assert np.isclose(got["weight"], weights[key], atol=1e-4)          # softmax of the recomputed scores
    got = numbers(lesson.step("values", focus))
    assert np.allclose(got["z"], (weights @ v)[:4], atol=1e-4)
    assert np.allclose(got["z"], values.value("z")[layer, head, word, :4], atol=1e-5)
    got = numbers(lesson.step("output", focus))
    w_o, b_o = (t.float().numpy() for t in h8.attention_output_weights("encoder", layer))
    concatenated = values.value("z")[layer, :, word].reshape(-1)
    assert np.allclose(got["output"], (concatenated @ w_o.T + b_o)[:4], atol=1e-4)
    got = numbers(lesson.step("embedding", focus))
    assert np.allclose(got["input"], np.add(got["embedding"], got["positional"]), atol=1e-5)
    assert np.allclose(got["embedding"], (h8.model.embedding.weight[trace.source_ids[word]].float()
                                          * np.sqrt(h8.d_model))[:4].detach().numpy(), atol=1e-2)   # fp16 weights
    got = numbers(lesson.step("probabilities", focus))
    assert got["chosen"] == trace.steps[step].chosen
    assert np.isclose(got["probability"], trace.steps[step].chosen_prob)
    got = numbers(lesson.step("masked", focus))
    position = trace.first_step_position + step
    assert got["visible"] == position + 1 and got["future"] == 0
    got = numbers(lesson.step("cross", focus))
    row = trace.pattern("cross")[layer, head, position]
    assert got["source"] == trace.source_tokens[int(np.argmax(row))] and np.isclose(got["weight"], row.max())


def test_a_chosen_key_is_followed(lecture):
    lesson, trace = lecture
    got = numbers(lesson.step("softmax", Focus(12, 1, 2, 0, 0)))          # "it" → "animal"
    assert got["key"] == "▁animal"
    assert np.isclose(got["weight"], trace.pattern("encoder")[2, 0, 12, 1])


def test_the_differences_from_the_paper_are_the_models(lecture):
    lesson, _ = lecture
    focus = lesson.default_focus()
    assert "÷ 5.66" in lesson.step("scale", focus).differs and "÷ 8" in lesson.step("scale", focus).differs
    assert "6 layers; this model has 3" in lesson.step("layers", focus).differs
    assert "Pre-norm" in lesson.step("output", focus).differs


def test_a_link_carries_the_same_word_layer_and_head(lecture):
    lesson, _ = lecture
    link = lesson.step("qkv", Focus(5, -1, 1, 3, 2)).link          # piece 5 is the "'" of didn't: no word
    assert link.page == "internals.py" and link.parameters == {"part": "Q, K, V walkthrough", "head": "encoder.1.3",
                                                               "query": "5", "step": "2"}
    heads_link = lesson.step("heads", Focus(1, -1, 1, 3, 2)).link
    assert lesson.words[1] == "▁animal" and heads_link.parameters["word"] == "animal"
    # every step's link carries them, the cross-attention head's own kind kept
    for slug in lesson.slugs:
        carried = lesson.step(slug, Focus(5, -1, 1, 3, 2)).link
        if carried is not None:
            assert {"query": "5", "step": "2"}.items() <= carried.parameters.items(), slug
            assert carried.parameters["head"] == {"cross": "cross.1.3", "masked": "decoder.1.3"}.get(slug, "encoder.1.3")


def test_a_focus_out_of_range_is_clamped(lecture):
    lesson, trace = lecture
    step = lesson.step("softmax", Focus(999, 999, 99, 99, 999))
    assert numbers(step)["key"] in trace.source_tokens


@pytest.mark.parametrize("family, expected", [
    ("gpt2", ["sentence", "embedding", "qkv", "scores", "scale", "softmax", "values", "matrix", "heads", "output", "block",
              "layers", "probabilities", "next", "training"]),
    ("bert", ["sentence", "embedding", "qkv", "scores", "scale", "softmax", "values", "matrix", "heads", "output", "block",
              "layers"]),
    ("t5", ["sentence", "qkv", "scores", "scale", "softmax", "values", "matrix", "heads", "output", "block", "layers",
            "masked", "cross", "probabilities", "next", "training"]),
])
@pytest.mark.slow
def test_the_steps_follow_what_a_model_can_do(family, expected, tmp_path_factory):
    """A decoder-only model walks its decoder and has no cross-attention; a masked language model has no decoding;
    T5 adds no position to its input (a relative bias instead). Every step draws on every family."""
    torch.manual_seed(0)
    model = open_model(str(saved_model(family, tmp_path_factory)))
    trace = trace_sentence(model, "a dog runs in the park")
    lesson = Lesson(model, trace)
    assert lesson.slugs == expected
    focus = lesson.default_focus()
    for slug in lesson.slugs:
        step = lesson.step(slug, focus)
        assert step.numbers and (step.figure is not None or step.tokens), (family, slug)
    walk = lesson.walk(focus)
    assert np.isclose(walk.weights.sum(), 1, atol=1e-5)
    reader = lesson.reader
    assert np.allclose(walk.weights, trace.pattern(reader)[focus.layer, focus.head, focus.word], atol=1e-5)


def test_every_step_links_terms_the_glossary_has():
    from explorer.teaching.glossary import entry
    from explorer.teaching.lesson_steps import STEP_TERMS

    assert set(STEP_TERMS) == set(TITLES)
    for terms in STEP_TERMS.values():
        for term in terms:
            assert entry(term).definition


def test_the_softmax_step_says_how_many_heads_agree_with_the_one_it_shows(h8):
    """One head's weights are read as the model's only when most heads agree: the step counts the heads of the
    stack whose largest weight from the followed word is on the same key (recounted here from the trace)."""
    from explorer.capture.trace import trace_sentence
    from explorer.teaching.lesson import Lesson
    from explorer.teaching.lesson_steps import Focus

    trace = trace_sentence(h8, "The animal didn't cross the street because it was too tired.")
    lesson = Lesson(h8, trace)
    it = lesson.default_focus().word
    step = lesson.step("softmax", Focus(it, -1, 2, 0, 0))
    rows = trace.pattern("encoder")[:, :, it]
    key = int(rows[2, 0].argmax())
    agreeing = int((rows.argmax(-1) == key).sum())
    assert trace.source_tokens[key] == "▁animal" and agreeing == 1
    assert "1 of 24 heads of the encoder gives “▁animal” the most weight from “▁it”." in step.text


def test_the_residual_step_states_transformers_own_hidden_states(tmp_path_factory):
    """What enters and leaves a layer, for the followed word: transformers' own hidden_states[L] and [L + 1] (a
    tiny BERT, post-norm), and the cosine between them recomputed."""
    from transformers import BertForMaskedLM

    folder = saved_model("bert", tmp_path_factory)
    model = open_model(str(folder))
    trace = trace_sentence(model, "a dog runs in the snow")
    lesson = Lesson(model, trace)
    focus = Focus(2, -1, 1, 0, 0)
    numbers = {number.name: number.value for number in lesson.step("block", focus).numbers}
    theirs = BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        hidden = theirs(input_ids=torch.tensor([trace.source_ids]), output_hidden_states=True).hidden_states
    entering, leaving = hidden[1][0, 2].numpy(), hidden[2][0, 2].numpy()
    assert numbers["entering"] == pytest.approx(np.linalg.norm(entering), rel=1e-5)
    assert numbers["leaving"] == pytest.approx(np.linalg.norm(leaving), rel=1e-5)
    cosine = entering @ leaving / (np.linalg.norm(entering) * np.linalg.norm(leaving))
    assert numbers["cosine"] == pytest.approx(float(cosine), abs=1e-5)
    assert "LayerNorm(x + Attention(x))" in lesson.step("block", focus).text        # BERT is post-norm


def test_the_layer_steps_rows_add_up_on_a_pre_norm_model(h8):
    """Step 11 on en-de-h8 (pre-norm): entering + attention's output + the feed-forward's output = leaving, the
    drawn rows' values and the stated lengths alike; the text says the stream's length may grow, as it does."""
    trace = trace_sentence(h8, "A young boy in a red shirt is jumping into a swimming pool.")
    lesson = Lesson(h8, trace)
    step = lesson.step("block", Focus(6, -1, 1, 5, 0))
    rows = {row: np.array(values) for row, values in zip(step.figure.data[0].y, step.figure.data[0].z)}
    entering, attention, feed_forward, leaving = rows.values()
    np.testing.assert_allclose(entering + attention + feed_forward, leaving, atol=1e-4)
    numbers = {number.name: number.value for number in step.numbers}
    assert numbers["sum"] == pytest.approx(numbers["leaving"], rel=1e-5)
    assert list(rows) == ["entering the layer", "+ attention's output", "+ feed-forward's output",
                          "= leaving the layer"]
    assert "not the stream itself" in step.text and "so the sums do not grow" not in step.text


def test_labels_a_student_reads_show_every_token_as_written():
    """Small things that broke trust (issue 61): a row label naming </s> keeps it (plotly reads </s> as a tag), the
    value of a long bar is not written under the one-hot target's mark, and the word the Lesson opens on is a word,
    not <unk>."""
    from explorer.analyses.sentence.internals import default_query
    from explorer.figures.lesson import one_hot_bars, vector_rows

    rows = vector_rows({"11% × v of </s>": np.ones(4), "3% × v of <s>": np.zeros(4)}, "values")
    assert list(rows.data[0].y) == ["11% × v of &lt;/s&gt;", "3% × v of &lt;s&gt;"]
    bars = one_hot_bars(["▁Hund", "▁Katze"], [0.944, 0.03], "▁Hund", "step 1")
    assert list(bars.data[0].textposition) == ["inside", "outside", "outside"]
    assert default_query(["[CLS]", "a", "[UNK]", "[UNK]", "[UNK]", "runs", "[SEP]"]) in (1, 5)   # a word, not [UNK]
    assert default_query(["<s>", "a", "<unk>", "<unk>", "<unk>", "runs", "</s>"]) in (1, 5)


def test_the_matrix_step_draws_the_slide_with_v_and_named_keys(h8):
    """Z = softmax(QKᵀ/√d_k)·V as the lecture's slide: five panels, the drawn Z is the drawn weights times the drawn
    V, keys are named under Kᵀ and the weights, and the weights' colours reach their largest value (issue 61)."""
    trace = trace_sentence(h8, "A young boy in a red shirt is jumping into a swimming pool.")
    lesson = Lesson(h8, trace)
    figure = lesson.step("matrix", Focus(6, -1, 1, 5, 0)).figure
    q, k_t, weights, v, z = (np.array(panel.z, dtype=float) for panel in figure.data)
    np.testing.assert_allclose(weights @ v, z, atol=1e-5)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-5)
    assert list(figure.data[1].x) == list(figure.data[2].x) == list(figure.data[3].y)          # the keys, by name
    assert "▁red" in " ".join(figure.data[1].x)
    assert figure.data[2].zmax == pytest.approx(weights.max()) and figure.data[2].zmax < 1
    assert [annotation.text for annotation in figure.layout.annotations][:5] == [
        "Q", "Kᵀ", "softmax(QKᵀ/√d_k)", "V", "Z = weights · V"]


def test_the_masked_step_shows_the_whole_triangle_up_to_twenty_output_pieces(h8):
    """The lecture draws the whole look-ahead triangle: every decoder position, up to the start token and 20 output
    pieces, is a row and a column, the cells above the diagonal masked (issue 61)."""
    trace = trace_sentence(h8, "A young boy in a red shirt is jumping into a swimming pool while his friends watch.")
    lesson = Lesson(h8, trace)
    assert 10 < len(trace.target_tokens) <= 21
    figure = lesson.step("masked", Focus(3, -1, 1, 5, 2)).figure
    weights = np.array(figure.data[1].z, dtype=float)
    assert weights.shape == (len(trace.target_tokens), len(trace.target_tokens))
    assert np.isnan(weights[np.triu_indices_from(weights, 1)]).all()             # the future: masked
    np.testing.assert_allclose(np.nansum(weights, axis=1), 1, atol=1e-5)


def test_the_qkv_step_says_where_the_layers_before_went(h8):
    """Right after "the sum is what layer 0 reads", a step on the last layer says layers 0 and 1 came between."""
    lesson = Lesson(h8, trace_sentence(h8, "A dog runs in the park."))
    assert "after layers 0 and 1 added" in lesson.step("qkv", Focus(2, -1, 2, 0, 0)).text
    assert "The steps look into" not in lesson.step("qkv", Focus(2, -1, 0, 0, 0)).text


def test_every_head_step_draws_the_concatenated_z_that_w_o_reads(h8):
    """"Every head, concatenated" draws each head's z (the trace's own, head by head) in the order W_O reads them,
    and the W_O step draws the concatenation beside what W_O makes of it (issue 61)."""
    trace = trace_sentence(h8, "A dog runs in the park.")
    lesson = Lesson(h8, trace)
    focus = Focus(2, -1, 1, 5, 0)
    figure = lesson.step("heads", focus).figure
    drawn = np.array(figure.data[0].z, dtype=float)
    own = trace.attention["encoder"].value("z")[1, :, 2]                  # [heads, d_k], captured by the hooks
    np.testing.assert_allclose(drawn, own[:, :drawn.shape[1]], atol=1e-5)
    assert "head 5's z (followed)" in list(figure.data[0].y)
    rows = list(lesson.step("output", focus).figure.data[0].y)
    assert rows[0].startswith("concatenated z (256") and rows[1].startswith("× W_O + bias")
