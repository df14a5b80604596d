"""bertviz's views work with no network and show any token text as text."""

import json
import re

import pytest

from explorer.capture.trace import trace_sentence
from explorer.figures.bertviz_views import head_view_html, model_view_html, script_safe_json

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture(scope="module")
def hostile_trace(tiny_checkpoint):
    trace = trace_sentence(tiny_checkpoint, "A dog " + HOSTILE)
    trace.source_tokens[1] = HOSTILE  # as if the tokenizer had kept the markup as one piece
    return trace


@pytest.mark.slow
@pytest.mark.parametrize("render", [head_view_html, model_view_html])
def test_no_cdn_and_no_markup_escapes_the_parameters(hostile_trace, render):
    page = render(hostile_trace)
    # Nothing is fetched: no script/link sources, no require.js paths, no CDN host anywhere.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert not re.search(r"require\.config\(\{\s*paths", page) and not re.search(r"cdnjs|unpkg|jsdelivr|code\.jquery", page)
    assert "<script src" not in page
    assert HOSTILE not in page and "<img src=x" not in page
    assert page.count("</script>") == 6  # jQuery, d3, require.js, the module bridge, bertviz's view, fit-to-width
    params = re.search(r"const params = (\{.*?\}); //", page).group(1)
    assert json.loads(params)["attention"][0]["left_text"][1] == HOSTILE  # the text survives, as text


def test_script_safe_json_round_trips():
    value = {"t": ["</script>", "a&b", "<!--", "\u2028"]}
    encoded = script_safe_json(value)
    assert not set("<>&") & set(encoded) and json.loads(encoded) == value
