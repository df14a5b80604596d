import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.browser.harness import ONE_RENDERER, shared_streamlit_server, warm_offline_context


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """The app's server, one for both xdist workers (their run's temporary folder is the parent of each one's)."""
    run_folder = tmp_path_factory.getbasetemp()
    with shared_streamlit_server(run_folder.parent if os.environ.get("PYTEST_XDIST_WORKER") else run_folder) as url:
        yield url


@pytest.fixture(scope="session")
def playwright_driver():
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="session")
def warm_context(playwright_driver, tmp_path_factory):
    """One offline context for the tests of a worker. Its list of blocked requests is never cleared but by the one
    test that makes some on purpose: a request that left this machine in any test fails the next test's setup,
    the end of a module's shared tab, or the end of the session."""
    context = warm_offline_context(playwright_driver, tmp_path_factory.mktemp("chromium-profile"), ONE_RENDERER)
    yield context
    blocked = list(context.blocked)
    context.close()
    assert blocked == [], f"requests that left this machine: {blocked}"


@pytest.fixture
def context(warm_context):
    """The warm offline context for one test: each tab it opens is a new Streamlit session, as in a fresh context,
    and the tabs it opened are closed after it."""
    assert warm_context.blocked == [], f"requests that left this machine in an earlier test: {warm_context.blocked}"
    before = set(warm_context.pages)
    yield warm_context
    for page in warm_context.pages:
        if page not in before:
            page.close()


# The browser tests in two xdist groups of about equal time (durations of a full run: every-page 36 s a sentence
# length, test_explorer 78 s, heads 29, decoding 29, readable 27, serving 25, lesson 23, view state 20): each group
# runs on one xdist worker with its own Streamlit server and Chromium. (Four groups on four workers took 330 s and
# three on three 307 s, against 310 s for two on two: the 2-core machine is busy either way.)
HERE = Path(__file__).parent
GROUPS = {"test_explorer.py": "browser-1", "test_heads_page.py": "browser-1", "test_decoding_page.py": "browser-1",
          "test_lesson.py": "browser-1", "test_images_page.py": "browser-1",
          "test_every_page.py": "browser-2", "test_readable.py": "browser-2", "test_serving.py": "browser-2",
          "test_view_state.py": "browser-2", "test_atlas_page.py": "browser-2"}


@pytest.hookimpl(tryfirst=True)          # before xdist reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        module = item.path.name
        if item.path.parent == HERE and module.startswith("test_"):
            if module not in GROUPS:
                raise pytest.UsageError(f"tests/browser/{module}: give it a group in GROUPS (tests/browser/conftest.py)")
            item.add_marker(pytest.mark.xdist_group(GROUPS[module]))
