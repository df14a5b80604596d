"""The app on Hugging Face models opened from a folder: Translation and Attention draw the model's own output and
attention; the other pages say they work on the explorer's own models so far. Tiny random models of
every family (tests/hugging_face_models.py)."""

import json

import numpy as np
import pytest

from tests.app.conftest import open_page
from tests.app.test_pages import traces_of
from tests.hugging_face_models import FAMILIES, SENTENCE, saved_model
from views.session import OWN


@pytest.fixture(scope="module", params=list(FAMILIES))
def folder(request, tmp_path_factory):
    return saved_model(request.param, tmp_path_factory)


def test_translation_and_attention_show_the_models_own_numbers(folder):
    from explorer.hugging_face_trace import load_tokenizer, trace_hugging_face
    from models.hugging_face import load_hugging_face

    loaded = load_hugging_face(folder)
    expected = trace_hugging_face(loaded, load_tokenizer(folder), SENTENCE)
    at = open_page("views/translation.py", SENTENCE, model=OWN, own_model=str(folder))
    assert at.text[0].value == expected.translation
    assert any("Hugging Face" in c.value for c in at.caption)
    at = open_page("views/attention.py", SENTENCE, model=OWN, own_model=str(folder))
    kinds = at.radio(key="attention_kind").options
    assert len(kinds) == len(loaded.kinds)                           # only the kinds the model has
    kind = loaded.kinds[0]
    heatmap = traces_of(json.loads(at.get("plotly_chart")[0].proto.spec))[0]
    np.testing.assert_allclose(np.array(heatmap["z"], dtype=float), expected.pattern(kind)[0, 0], atol=1e-6)


def test_internals_and_decoding_draw_every_family(folder):
    at = open_page("views/internals.py", SENTENCE, model=OWN, own_model=str(folder))
    titles = [json.loads(chart.proto.spec)["layout"]["title"]["text"] for chart in at.get("plotly_chart")]
    assert any("position" in title.lower() for title in titles) and any("scores over the keys" in t for t in titles)
    at = open_page("views/decoding.py", SENTENCE, model=OWN, own_model=str(folder))
    titles = [json.loads(chart.proto.spec)["layout"]["title"]["text"] for chart in at.get("plotly_chart")]
    if "bert" in str(folder.name):
        assert any(t.startswith("masked") for t in titles) and any("Heads behind" in t for t in titles)
    else:
        assert "Every step" in titles[0] and any("Beam" in t or "beam" in t for t in titles)


