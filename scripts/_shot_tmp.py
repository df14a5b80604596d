import sys
from pathlib import Path
from playwright.sync_api import sync_playwright
from tests.browser.harness import streamlit_server, warm_offline_context, settle, ONE_RENDERER
url_tail, out, width = sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1400
with streamlit_server(Path("/tmp/proj/st2.log")) as url, sync_playwright() as pw:
    ctx = warm_offline_context(pw, Path("/tmp/proj/profile2"), ONE_RENDERER)
    page = ctx.new_page(); page.set_viewport_size({"width": width, "height": 2400})
    page.goto(f"{url}/{url_tail}")
    page.get_by_label("English sentence").first.wait_for(timeout=120_000)
    settle(page); page.wait_for_timeout(2500); settle(page)
    page.screenshot(path=out, full_page=True)
