import pytest
from playwright.sync_api import sync_playwright

from tests.browser.harness import launch, streamlit_server


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
