"""AppTest of issue 22's word-level views, attention sinks and attention flow: what the pages draw is the explorer's
own numbers (words, rollout, flow, sink shares), on the bundled model and on tiny Hugging Face models."""

import html
import json

import numpy as np
import pytest

from explorer.analyses.sentence.flow import attention_flow
from explorer.analyses.sentence.rollout import attention_rollout
from explorer.analyses.sentence.sinks import sinks
from explorer.capture.trace import trace_sentence
from explorer.capture.words import word_trace
from explorer.models.loader import open_model
from explorer.pages.components.session import OWN
from tests.app.conftest import html_figure, open_page, token_heatmaps
from tests.app.test_pages import grid_tile, table_with, traces_of
from tests.explorer.test_thumbnails import assert_drawn, tiles
from tests.explorer.test_token_heatmap import heatmap_cells
from tests.hugging_face_models import SENTENCE, saved_model

WORDY = "A skateboarder's kickflip, near Nuremberg."    # 17 pieces, 8 words (the apostrophe's inside one)
SINKING = "Three men are walking on a road in the mountains."     # h8's dec.2.6 is a sink on it


def z(chart) -> np.ndarray:
    return np.array(chart[0]["z"], dtype=float)


def drawn(at, titled: str) -> dict:
    """The one heatmap titled so, read back (tests/explorer/test_token_heatmap.py)."""
    [body] = token_heatmaps(at, titled)
    return heatmap_cells(body)


@pytest.mark.slow
def test_words_toggle_redraws_every_attention_view_over_words(h8):
    at = open_page("attention.py", WORDY)
    at.session_state["attention_units"] = "words"
    at.run()
    assert not at.exception and at.query_params["units"] == "words"
    words = word_trace(h8, trace_sentence(h8, WORDY))
    assert words.source_tokens == ["▁A", "▁skateboarder's", "▁kickflip", ",", "▁near", "▁Nuremberg", ".", "</s>"]
    pattern = words.pattern("encoder")
    head = heatmap_cells(token_heatmaps(at)[0])
    np.testing.assert_allclose(head["weights"], pattern[0, 0], atol=1e-5)
    assert [label.split(" ", 1)[1] for label in head["columns"]][1:6] == words.source_tokens[1:6]
    assert_drawn(grid_tile(at, 2, 5), pattern[2, 5])

    at.session_state["attention_view"] = "Rollout & flow"
    at.run()
    np.testing.assert_allclose(drawn(at, "Encoder rollout")["weights"], attention_rollout(pattern)[-1], atol=1e-6)
    np.testing.assert_allclose(drawn(at, "Encoder attention flow")["weights"], attention_flow(pattern), atol=1e-6)
    at.session_state["attention_view"] = "bertviz head view"
    at.run()
    [frame] = at.get("iframe")
    assert "▁kickflip" in frame.proto.srcdoc and "▁kick" + '"' not in frame.proto.srcdoc    # words, not pieces
    at.session_state["attention_view"] = "Rollout & flow"
    at.session_state["attention_units"] = "pieces"
    at.run()
    assert "units" not in at.query_params                   # the default stays out of the link
    pieces = trace_sentence(h8, WORDY).pattern("encoder")
    np.testing.assert_allclose(drawn(at, "Encoder attention flow")["weights"], attention_flow(pieces), atol=1e-6)


def test_rollout_and_flow_follow_decoder_self_attention_and_refuse_cross(h8):
    at = open_page("attention.py", SENTENCE.capitalize() + ".")
    at.session_state["attention_view"] = "Rollout & flow"
    at.radio(key="attention_kind").set_value("decoder").run()
    decoder = trace_sentence(h8, SENTENCE.capitalize() + ".").pattern("decoder")
    np.testing.assert_allclose(drawn(at, "Decoder rollout")["weights"], attention_rollout(decoder)[-1], atol=1e-6)
    flow = drawn(at, "Decoder attention flow")["weights"]
    np.testing.assert_allclose(flow, attention_flow(decoder), atol=1e-6)
    assert np.all(np.triu(flow, 1) == 0)                       # nothing flows from a later token
    assert any("s at 20 and" in caption.value for caption in at.caption)      # flow's cost, said on the page
    at.radio(key="attention_kind").set_value("cross").run()
    assert any("choose encoder or decoder" in info.value for info in at.info)


def test_flow_beyond_its_cap_says_so_and_rollout_still_draws():
    from explorer.analyses.sentence.flow import MAX_FLOW_TOKENS

    long = " ".join(["A dog runs in the park."] * 12)
    at = open_page("attention.py", long)
    at.session_state["attention_view"] = "Rollout & flow"
    at.run()
    assert not at.exception
    assert drawn(at, "Encoder rollout")["weights"].size
    assert any(f"at most {MAX_FLOW_TOKENS} tokens" in info.value for info in at.info)


def test_sink_heads_outlined_on_the_grid_and_listed_on_heads(h8):
    at = open_page("attention.py", SINKING)
    at.radio(key="attention_kind").set_value("decoder").run()
    grid = html_figure(at, "every-head")
    rows = [row for row in sinks(h8, trace_sentence(h8, SINKING)) if row["sink"]]
    decoder = [row for row in rows if row["kind"] == "decoder"]
    outlined = [tile for tile in tiles(grid) if "darkorange" in tile["markup"]]
    assert decoder and [tile["hover"] for tile in outlined] == [
        f"decoder layer {row['layer']}, head {row['head']} (sink {row['weight']:.2f} · norm {row['norm']:.2f})"
        for row in decoder]

    heads = open_page("heads.py", SINKING, heads_part="Attention sinks")
    assert any(header.value == "Attention sinks on your sentence" for header in heads.header)
    table = table_with(heads, "share by weight")
    rows.sort(key=lambda row: -row["weight"])
    assert list(table["head"]) == [row["spec"] for row in rows]
    np.testing.assert_allclose(table["share by weight"], [row["weight"] for row in rows])
    np.testing.assert_allclose(table["share by norm"], [row["norm"] for row in rows])
    # short kind names, so that every column fits the page; <s>, the decoder's first key, is counted as the first
    # token, and the page says so
    assert list(table["kind"]) == [{"encoder": "enc", "decoder": "dec", "cross": "cross"}[row["kind"]] for row in rows]
    assert any("The first key of the dec heads (<s>)" in html.unescape(caption.value)
               and "not under “special tokens”" in caption.value for caption in heads.caption)


@pytest.mark.slow
def test_compare_draws_words_for_every_model(h8):
    at = open_page("compare.py", WORDY)
    at.session_state["compare_units"] = "words"
    at.run()
    assert not at.exception
    words = word_trace(h8, trace_sentence(h8, WORDY))
    panels = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    eight = next(spec for spec in panels if "en-de-h8" in spec["layout"]["title"]["text"]
                 and "encoder layer 0" in spec["layout"]["title"]["text"])
    np.testing.assert_allclose(z(traces_of(eight)[3:]), words.pattern("encoder")[0, 3], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bert", "gpt2", "marian"])
def test_hugging_face_models_draw_words_flow_and_sinks(family, tmp_path_factory):
    folder = saved_model(family, tmp_path_factory)
    model = open_model(str(folder))
    at = open_page("attention.py", SENTENCE, model=OWN, own_model=str(folder))
    at.session_state["attention_units"] = "words"
    at.session_state["attention_view"] = "Rollout & flow"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    kind = model.kinds[0]
    words = word_trace(model, trace_sentence(model, SENTENCE)).pattern(kind)
    stack = kind.capitalize()
    flow = drawn(at, f"{stack} attention flow")
    # A sentence of more words than a projector's column labels is drawn as a window of them (each cell names its
    # positions in the sentence), the whole pattern beside it
    np.testing.assert_allclose(flow["weights"], attention_flow(words)[np.ix_(flow["queries"], flow["keys"])],
                               atol=1e-6)
    heads = open_page("heads.py", SENTENCE, model=OWN, own_model=str(folder), heads_part="Attention sinks")
    assert any(header.value == "Attention sinks on your sentence" for header in heads.header)
