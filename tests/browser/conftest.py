import pytest
from playwright.sync_api import sync_playwright

from tests.browser.harness import launch, offline_context, streamlit_server


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    with streamlit_server(tmp_path_factory.mktemp("streamlit") / "server.log") as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@pytest.fixture
def context(browser):
    """A fresh offline browser context (its own session and cookies) for one test."""
    context = offline_context(browser)
    yield context
    context.close()
