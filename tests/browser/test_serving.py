"""A served explorer (`start.sh --serve`), in a real browser against the real launcher: each way a visitor could
make the server open a folder, read a file or reach a Ray cluster is refused on the page and in the log; the
default start listens on 127.0.0.1 only (checked on the fresh server of test_explorer.py's cold-URL test)."""

import contextlib
from urllib.parse import quote, urlparse

import pytest

from tests.browser.harness import (
    POLL_MS,
    free_port,
    go_to,
    listening,
    open_view,
    query_parameters,
    settle,
    streamlit_server,
)

TOKEN = "a-class-token-1234"
SENTENCE = "Two dogs play in the snow."
ANY_ADDRESS = "0.0.0.0"


class ServedExplorer:
    """`start.sh --serve --token TOKEN` on one port, which a test can restart on the same port."""

    def __init__(self, folder):
        self.folder, self.port, self.starts = folder, free_port(), 0
        self.start()

    def start(self) -> None:
        self.starts += 1
        self.log = self.folder / f"server-{self.starts}.log"
        self.running = contextlib.ExitStack()
        self.url = self.running.enter_context(
            streamlit_server(self.log, launch_options=["--serve", "--token", TOKEN], port=self.port))

    def restart(self) -> None:
        self.running.close()
        self.start()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = ServedExplorer(tmp_path_factory.mktemp("served"))
    yield server
    server.running.close()


def test_a_served_explorer_refuses_every_way_in(served, context, h8):
    from explorer.capture.translation import translate

    url, log = served.url, served.log
    assert listening(urlparse(url).port) == {ANY_ADDRESS}
    page = context.new_page()

    page.goto(f"{url}/?sentence={quote(SENTENCE)}")                         # no token
    page.get_by_text("shared with an access token").wait_for(timeout=60_000)
    assert page.get_by_label("English sentence").count() == 0
    page.goto(f"{url}/?token=not-it")                                       # a wrong one
    page.get_by_text("The access token in this link is not this server's").wait_for(timeout=60_000)
    page.get_by_label("Access token").fill("guess")
    page.get_by_label("Access token").press("Enter")
    page.get_by_text("That is not this server's access token.").wait_for(timeout=60_000)

    page.goto(f"{url}/?token={TOKEN}&model=/etc&sentence={quote(SENTENCE)}")  # a server folder in the link
    page.get_by_text("This server offers only its own models, not “/etc”").wait_for(timeout=60_000)
    settle(page)
    page.get_by_text(translate(h8, [SENTENCE])[0], exact=True).wait_for(timeout=10_000)     # the default model's
    assert page.get_by_label("Checkpoint folder").count() == 0

    go_to(page, "Heads")
    settle(page)
    page.get_by_text("Recompute on your own corpus").click()
    page.get_by_text("as this server's host set it").wait_for(timeout=30_000)
    assert page.get_by_label("… or its path on the server").count() == 0        # no corpus path to type
    assert page.get_by_label("Ray cluster address (optional)").count() == 0     # no Ray address either
    assert page.get_by_text("the bundled val.en.gz is used").count() >= 1

    page.goto(f"{url}/compare?token={TOKEN}&compare_others=/root&sentence={quote(SENTENCE)}")
    page.get_by_text("This server compares only its own models, not “/root”").wait_for(timeout=60_000)

    lines = log.read_text().splitlines()
    refused = [line for line in lines if " refused " in line]
    assert any("/etc" in line for line in refused) and any("/root" in line for line in refused)
    assert sum("token" in line for line in refused) >= 2 and TOKEN not in "\n".join(refused)
    assert not [line for line in lines if "Traceback" in line]
    assert context.blocked == []


def test_a_restarted_server_reopens_the_same_view(served, context):
    """The tab stays open while the server restarts (same port, same token): it reconnects to the view the URL
    holds — the model, the sentence and the head — without asking for the token again."""
    page = open_view(context, served.url, "attention", token=TOKEN, model="h2", sentence=SENTENCE, head="cross.1.1",
                     view="Head average")
    page.locator(".token-heatmap", has_text="cross, layer 1, head 1").wait_for()
    page.evaluate("window.beforeRestart = true")
    served.restart()
    page.wait_for_function(     # the tab reloaded itself (the mark set before is gone) and is connected
        "() => !window.beforeRestart && document.querySelector('textarea[aria-label=\"English sentence\"]')"
        " && !document.querySelector('textarea[disabled]')", timeout=60_000, polling=POLL_MS)
    settle(page)
    go_to(page, "Internals")            # the visitor goes on: a new session, opened on the URL's view
    settle(page)
    assert page.get_by_role("radio", name="Encoder–decoder cross-attention").is_checked()
    assert query_parameters(page)["head"] == "cross.1.1"
    assert page.get_by_label("Model").input_value() == "2 heads (en-de-h2)"
    assert page.get_by_label("English sentence").input_value() == SENTENCE
    assert query_parameters(page)["model"] == "h2" and query_parameters(page)["token"] == TOKEN
    assert context.blocked == []
