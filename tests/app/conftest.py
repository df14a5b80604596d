import pytest
from streamlit.testing.v1 import AppTest

from explorer.pages.registry import DEFAULT
from explorer.pages.registry import page as registered
from tests.conftest import ROOT

# The pages that draw one sentence's trace, which tests/app/test_pages.py reads one after another (by their files).
PAGES = [registered(name).file for name in ("translation", "attention", "internals", "decoding", "heads")]
LANDING = DEFAULT.file      # the page the app opens on (pages/registry.py)


def open_page(page: str, sentence: str | None = None, **state) -> AppTest:
    """Run the app on one page, with the given sidebar state; fail on any exception."""
    at = AppTest.from_file(str(ROOT / "pages" / "app.py"), default_timeout=180)
    if sentence is not None:
        at.session_state["sentence"] = sentence
    for key, value in state.items():
        at.session_state[key] = value
    if page != LANDING:
        at.switch_page(page)        # before the first run: the landing page's views are not drawn for nothing
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page != LANDING:             # the page guessed by its file name before the run is the one registered
        opened = at._page_hash
        assert at.switch_page(page)._page_hash == opened, f"{page} did not open"
    return at


@pytest.fixture
def page():
    return open_page


def open_part(at: AppTest, part: str, key: str = "internals_part") -> AppTest:
    """Open one tab of a page drawn a tab at a time (Internals, `internals_part`: "Masks", "Scores → softmax",
    "Positions", "Q, K, V walkthrough"; Decoding, `decoding_part`: "Step by step", "Sampling", "Logit lens",
    "Beam search", "Teacher forcing"); only the open tab's figures are drawn."""
    at.session_state[key] = part
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def pruned_on_page(at: AppTest) -> set[str]:
    """The heads the Prune page's rows of buttons (one st.pills a layer, keyed prune_<model>_<kind>.<layer>) show
    pruned, named as the explorer names them ("cross.2.0")."""
    return {f"{row.key.rsplit('_', 1)[1]}.{head}" for row in at.main.pills for head in row.value or []}


def prune_on_page(at: AppTest, model: str, spec: str) -> AppTest:
    """Click head `spec` ("cross.2.0") in its layer's row of the Prune page, as a person does, and run."""
    layer, head = spec.rsplit(".", 1)
    row = at.pills(key=f"prune_{model}_{layer}")
    return row.set_value(sorted(set(row.value or []) | {int(head)})).run()


def token_heatmaps(at: AppTest, titled: str = "") -> list[str]:
    """The markup of the page's one-head heatmaps (explorer/figures/token_heatmap.py) whose title has `titled`, in
    the page's order."""
    return [block.proto.body for block in at.get("html")
            if 'class="token-heatmap"' in block.proto.body and titled in block.proto.body]


def html_figure(at: AppTest, name: str) -> str:
    """The markup of the page's one table figure of class `name` (st.html: "every-head", "whole-pattern",
    "focus-strips", "every-head-of-every-model" …); fails unless there is exactly one."""
    [body] = [block.proto.body for block in at.get("html") if f'class="{name}"' in block.proto.body]
    return body
