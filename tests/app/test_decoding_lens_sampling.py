"""The Decoding page's Sampling and Logit lens sections (AppTest): what they draw is the explorer's own computation,
the four sampling settings live in the URL so that a link reproduces the sample, temperature 0 gives the greedy
output, and the sections run on a tiny Hugging Face model of every family (GPT-2's lens over its decoder, BERT's at
the masked token)."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.analyses.sentence.logit_lens import lens_note, logit_lens, masked_logit_lens
from explorer.capture.decoding_steps import maskable_positions
from explorer.capture.sampling import sample, sample_log_probs, step_sampling
from explorer.capture.trace import trace_sentence
from explorer.models.loader import open_model
from explorer.models.sampling import Sampling
from explorer.pages.components.session import OWN
from tests.app.conftest import open_page, open_part
from tests.app.test_pages import traces_of
from tests.conftest import ROOT
from tests.hugging_face_models import PREDICTS_TOKENS, saved_model
from tests.hugging_face_models import SENTENCE as TINY_SENTENCE

SENTENCE = "A little girl is climbing the stairs of a wooden playhouse."   # not sure of itself: samples differ


def chart(at, words: str) -> dict:
    """The one chart whose title contains words: its data (decoded) and layout."""
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    found = [spec for spec in specs if words in spec["layout"].get("title", {}).get("text", "")]
    assert len(found) == 1, [spec["layout"].get("title", {}).get("text") for spec in specs]
    return {"data": traces_of(found[0]), "layout": found[0]["layout"]}


def sampled_text(at) -> str:
    """The Sampling tab's one text: the sampled output."""
    assert any(c.value.startswith("Sampled output") for c in at.caption)
    [sampled] = [t.value for t in at.main.text]
    return sampled


@pytest.mark.slow
def test_the_sections_draw_the_explorers_numbers_and_the_url_keeps_the_settings(h8):
    at = open_part(open_page("decoding.py", SENTENCE), "Logit lens", "decoding_part")
    trace = trace_sentence(h8, SENTENCE)
    lens = logit_lens(h8, trace)
    drawn = chart(at, "Logit lens")["data"][0]
    np.testing.assert_allclose(np.array(drawn["z"], dtype=float), lens.chosen_probs.T, atol=1e-6)
    assert [html.unescape(row[-1]) for row in drawn["text"]] == [top[0] for top in lens.top_tokens[-1]]
    assert lens_note(lens) in [c.value for c in at.caption]
    assert not any("Sampled output" in c.value for c in at.caption)        # only the open tab is drawn
    open_part(at, "Sampling", "decoding_part")
    # sampling at the defaults: T = 1, no filter, seed 0; the step view follows the sample, its drawn token marked
    drawn = sample(h8, SENTENCE, Sampling(1.0))
    log_probs = sample_log_probs(h8, drawn)
    view = step_sampling(log_probs[0], Sampling(1.0), h8, drawn_id=drawn.step_ids[0])
    bars = chart(at, "step 0 under T = 1")["data"]
    np.testing.assert_allclose(np.array(bars[0]["x"], dtype=float), view.model_probs, atol=1e-6)
    np.testing.assert_allclose(np.array(bars[1]["x"], dtype=float), view.sampled_probs, atol=1e-6)
    assert [html.unescape(label) for label in bars[0]["y"] if label.startswith("▶ ")] == [f"▶ {drawn.tokens[0]}"]
    assert sampled_text(at) == drawn.text
    assert any(f"where it drew `{drawn.tokens[0]}`" in c.value for c in at.caption)
    # new settings: the distribution is redrawn, the sample drawn again, all five in the URL
    default = sampled_text(at)
    at.select_slider(key="sampling_temperature").set_value(1.5)
    at.number_input(key="sampling_top_k").set_value(20)
    at.select_slider(key="sampling_top_p").set_value(0.9)
    at.number_input(key="sampling_seed").set_value(7)
    at.run()
    at.slider(key="sampling_step").set_value(2)
    at.run()
    assert not at.exception
    settings = Sampling(1.5, 20, 0.9, 7)
    drawn = sample(h8, SENTENCE, settings)
    view = step_sampling(sample_log_probs(h8, drawn)[2], settings, h8, drawn_id=drawn.step_ids[2])
    bars = chart(at, "step 2 under T = 1.5, top-k 20, top-p 0.9")["data"]
    np.testing.assert_allclose(np.array(bars[1]["x"], dtype=float), view.sampled_probs, atol=1e-6)
    assert [html.unescape(label) for label in bars[0]["y"] if label.startswith("▶ ")] == [f"▶ {drawn.tokens[2]}"]
    expected = sample(h8, SENTENCE, settings).text
    assert sampled_text(at) == expected != default
    assert {name: at.query_params[name] for name in ("temperature", "top_k", "top_p", "seed", "sample_step")} == \
        {"temperature": "1.5", "top_k": "20", "top_p": "0.9", "seed": "7", "sample_step": "2"}
    # the link opens the same sample in a fresh session
    link = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    link.query_params.update({"sentence": SENTENCE, "temperature": "1.5", "top_k": "20", "top_p": "0.9", "seed": "7",
                              "decoding_part": "Sampling"})
    link.run()
    link.switch_page("decoding.py")
    link.run()
    assert not link.exception and sampled_text(link) == expected


@pytest.mark.slow
def test_temperature_zero_is_the_greedy_output(h8):
    at = open_part(open_page("decoding.py", SENTENCE), "Sampling", "decoding_part")
    greedy = trace_sentence(h8, SENTENCE).output_text
    assert sampled_text(at) != greedy                       # T = 1 drew another translation
    at.select_slider(key="sampling_temperature").set_value(0.0).run()
    assert not at.exception
    assert sampled_text(at) == greedy
    assert any("temperature 0: greedy decoding" in c.value for c in at.caption)


@pytest.mark.slow
@pytest.mark.parametrize("family", PREDICTS_TOKENS)
def test_the_sections_run_on_hugging_face_models(family, tmp_path_factory):
    folder = saved_model(family, tmp_path_factory)
    model = open_model(folder)
    at = open_part(open_page("decoding.py", TINY_SENTENCE, model=OWN, own_model=str(folder)), "Logit lens",
                   "decoding_part")
    assert not at.error
    trace = trace_sentence(model, TINY_SENTENCE)
    drawn = chart(at, "Logit lens")["data"][0]
    if model.has("decoder"):
        expected = logit_lens(model, trace).chosen_probs
        sampled = sampled_text(open_part(at, "Sampling", "decoding_part"))
        assert sampled == sample(model, TINY_SENTENCE, Sampling(1.0)).text.strip()   # a BPE's leading space
    else:               # the masked token the page opens on, near the middle
        positions = maskable_positions(model, trace)
        expected = masked_logit_lens(model, trace, positions[len(positions) // 2]).chosen_probs
        assert not any("Sampled output" in c.value for c in at.caption)
    np.testing.assert_allclose(np.array(drawn["z"], dtype=float), expected.T, atol=1e-6)
