"""The Heads page has a tab for every registered analysis (explorer/analyses/registry.py): it draws the analysis's own
numbers for the sidebar's sentence, and its options are widgets whose value the URL keeps."""

import json

import numpy as np
import pytest

from explorer.analyses.registry import registered
from explorer.capture.trace import trace_sentence
from tests.app.conftest import open_page, open_part
from tests.app.test_pages import traces_of

SENTENCE = "Two dogs are playing in the snow."


@pytest.mark.parametrize("name", list(registered()))
def test_each_analysis_has_a_tab_that_draws_its_numbers(name, h8):
    analysis = registered()[name]
    at = open_part(open_page("heads.py", SENTENCE), analysis.title, "heads_part")
    assert at.query_params["section"] == analysis.title
    [chart] = at.get("plotly_chart")
    drawn = [np.array(trace["z"], dtype=float) for trace in traces_of(json.loads(chart.proto.spec))]
    expected = analysis.run(h8, trace_sentence(h8, SENTENCE))
    for values, scores in zip(drawn, expected.scores.values(), strict=True):
        np.testing.assert_allclose(values, scores, rtol=1e-6)
    switches = [option for option in analysis.options if isinstance(option.default, bool)]
    for option in switches:
        at.session_state[f"analysis_{name}_{option.name}"] = not option.default
        at.run()
        assert not at.exception
        assert at.query_params[f"{name}-{option.name}".replace("_", "-")] == "on"
        changed = analysis.run(h8, trace_sentence(h8, SENTENCE), **{option.name: not option.default})
        [chart] = at.get("plotly_chart")
        first = np.array(traces_of(json.loads(chart.proto.spec))[0]["z"], dtype=float)
        np.testing.assert_allclose(first, next(iter(changed.scores.values())), rtol=1e-6)


def test_a_number_option_reads_its_link_and_keeps_its_default_on_a_hand_edited_one():
    from explorer.pages.components.registered_analysis_section import number_from_link

    assert number_from_link("12", 3) == 12 and isinstance(number_from_link("12", 3), int)
    assert number_from_link("0.25", 0.5) == 0.25 and number_from_link("2e-3", 0.5) == 0.002
    assert number_from_link("12.5", 3) == 3 and number_from_link("<script>", 0.5) == 0.5 and number_from_link("", 7) == 7
