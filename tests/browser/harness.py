"""A real browser against a real `streamlit run`: Debian's Chromium driven by Playwright, offline.

Used by the browser tests and by benchmarks/browser.py. Every request to anything but localhost is aborted
and recorded, so a view that needs the network fails visibly.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from explorer.pages.registry import DEFAULT, PAGES
from explorer.pages.registry import page as registered

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium tries Google's hosts at start-up on this closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 # No host name but this machine's resolves: a request for anything else fails (offline_context)
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]
# For the tests: every tab of this one site in one renderer process. A new tab then reuses the scripts and styles
# that process has already parsed and compiled in memory: 1.5 s of Chromium's CPU a tab where it took 2.3-3.0 s
# (six tabs of Attention at 20 words, one after another). The benchmarks keep Chromium's own process model.
ONE_RENDERER = ["--renderer-process-limit=1", "--process-per-site"]
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(log_path: Path, script: Path = Path("pages/app.py"), launch_options: list[str] | None = None,
                    port: int | None = None, checkout: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """Start `streamlit run pages/app.py` (or another script) on a free port; return it and its URL once healthy.
    launch_options: start it as `start.sh` does instead (pages/launch.py), with these options (e.g. --serve).
    checkout: the explorer's folder it runs from (another checkout's, to compare two versions side by side)."""
    port = port or free_port()
    if launch_options is None:
        # Streamlit's own start, as the launcher runs it: no lookup of the machine's external address
        command = [sys.executable, "-m", "explorer.pages.streamlit_offline", "run", str(script), "--server.headless", "true",
                   "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    else:
        command = [sys.executable, "-m", "explorer.pages.launch", *launch_options, "--port", str(port)]
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command + ["--server.fileWatcherType", "none"],
            cwd=checkout, stdout=log, stderr=subprocess.STDOUT,
            # one BLAS thread, as start.sh's launcher sets (pages/launch.py), also when run as `streamlit run`
            env={"OPENBLAS_NUM_THREADS": "1", **os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://localhost:{port}"
    deadline = time.time() + 90
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return process, url
        except OSError:
            pass
        if process.poll() is not None or time.time() > deadline:
            process.terminate()
            raise RuntimeError(f"streamlit did not start: {log_path.read_text()[-2000:]}")
        time.sleep(0.3)


@contextlib.contextmanager
def streamlit_server(log_path: Path, script: Path = Path("pages/app.py"), launch_options: list[str] | None = None,
                     port: int | None = None, checkout: Path = ROOT):
    """A server of start_streamlit's for the block's length; yields its URL."""
    process, url = start_streamlit(log_path, script, launch_options, port, checkout)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


@contextlib.contextmanager
def shared_streamlit_server(folder: Path):
    """One `streamlit run pages/app.py` for every process of a test run that asks for it (the xdist workers): the
    first to come starts it, each uses it while it needs it, and the last to leave stops it. So a trace or an
    analysis one worker's tests computed is in the server's cache for the other's, and one start-up is spent.
    folder: a folder all of them share; it holds the server's URL, process id and count of users."""
    import fcntl
    import json
    import signal

    state = folder / "shared-streamlit.json"

    @contextlib.contextmanager
    def locked():
        with open(folder / "shared-streamlit.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    with locked():
        if state.exists():
            server = json.loads(state.read_text())
            server["users"] += 1
        else:                   # the others wait on the lock until it answers
            process, url = start_streamlit(folder / "shared-streamlit.log")
            server = {"url": url, "pid": process.pid, "users": 1}
        state.write_text(json.dumps(server))
    try:
        yield server["url"]
    finally:
        with locked():
            server = json.loads(state.read_text())
            server["users"] -= 1
            if server["users"]:
                state.write_text(json.dumps(server))
            else:
                state.unlink()
                os.kill(server["pid"], signal.SIGTERM)
                _wait_gone(server["pid"])


def _wait_gone(pid: int, timeout: float = 20) -> None:
    """Wait for a process this one may not be the parent of to end (or to be a zombie its parent will reap)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except OSError:
            return
        time.sleep(0.1)


def listening(port: int) -> set[str]:
    """The IPv4/IPv6 addresses a TCP port listens on, from the kernel's own table."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                local, state = row.split()[1], row.split()[3]
                address, port_hex = local.split(":")
                if state == "0A" and int(port_hex, 16) == port:       # 0A: LISTEN
                    if len(address) == 8:
                        found.add(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))
                    else:
                        found.add("::" if set(address) == {"0"} else address)
    return found


def launch(playwright, extra_args: list[str] = ()):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + list(extra_args))


VIEWPORT = {"width": 1400, "height": 1000}


def offline_context(browser):
    """A browser context in which every request leaving localhost fails (Chromium resolves no other host name,
    CHROMIUM_ARGS) and is listed in context.blocked. Watched, not routed: a routed context loses the HTTP cache,
    and every page load then fetched and compiled Streamlit's and plotly's scripts anew."""
    return watched(browser.new_context(viewport=VIEWPORT))


def warm_offline_context(playwright, profile: Path, extra_args: list[str] = ()):
    """An offline context (as offline_context) on a profile kept on disk, for many tests one after another: its
    cache keeps the scripts V8 compiled, which an in-memory context does not, and a new tab of a plotly page then
    takes ~1 s less CPU (3.9 → 2.9 s, Attention at 20 words). Each tab is still its own Streamlit session."""
    return watched(playwright.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS + list(extra_args), viewport=VIEWPORT))


def watched(context):
    """The context with every request that leaves this machine listed in context.blocked."""
    blocked: list[str] = []

    def watch(request):
        url = request.url
        if not (url.startswith(("data:", "blob:", "about:")) or urlparse(url).hostname in LOCAL_HOSTS):
            blocked.append(url)

    context.on("request", watch)
    context.blocked = blocked
    return context


# How often the waits below look at the page. Playwright's default looks at every animation frame, which keeps the
# page drawing frames at 60 a second for as long as the server computes.
POLL_MS = 40


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished the current run: the app's own script state (set the moment a rerun is
    asked for, where the 'running' indicator shows only after a delay) says not running, and nothing is stale."""
    page.wait_for_timeout(100)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"
        " === 'notRunning' && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && !document.querySelector('[data-stale=\"true\"]')",
        timeout=timeout, polling=POLL_MS)


def submit_sentence(page, sentence: str) -> None:
    box = page.get_by_label("English sentence")
    box.fill(sentence)
    box.press("Control+Enter")


def go_to(page, title: str) -> None:
    """Click a page's name in the sidebar and wait until the address is that page's: under load the app's script
    state can still read "not running" a moment after the click, and a settle() then returned on the old page."""
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    name = {shown: name for name, shown in PAGE_TITLES.items()}.get(title)
    if name is not None:
        path = "/" + page_path(name) if page_path(name) else ""
        page.wait_for_function("(path) => location.pathname.replace(/\\/+$/, '') === path", arg=path, timeout=60_000,
                               polling=POLL_MS)


# True once the run is over, every chart is drawn and the charts (their number and widths) have stayed the same
# for STABLE_MS, polled in the page: a run may start a moment after the page loads (a rerun the script asks for
# starts within ~0.1 s), and after a window's resize the charts take their new width a frame or two later.
STABLE_MS = 150
SETTLED = """(stableMs) => {
    const idle = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-testid="stStatusWidget"]') && !document.querySelector('[data-stale="true"]');
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    const drawn = charts.every(c => c.querySelector('.js-plotly-plot .main-svg .cartesianlayer'));
    if (!idle || !drawn) { window.explorerSettle = null; return false; }
    const look = charts.map(c => Math.round(c.querySelector('.main-svg').getBoundingClientRect().width)).join(',');
    const now = performance.now();
    if (!window.explorerSettle || window.explorerSettle.look !== look) {
        window.explorerSettle = {look, since: now};
        return false;
    }
    return now - window.explorerSettle.since >= stableMs;
}"""


def settle(page, timeout: float = 120_000) -> None:
    """Wait until the run has finished and the page has drawn the same charts at the same widths for STABLE_MS
    (after a click, a page change or a window's resize)."""
    page.wait_for_timeout(50)           # the click's rerun request reaches the app's script state
    page.evaluate("() => { window.explorerSettle = null; }")
    page.wait_for_function(SETTLED, arg=STABLE_MS, timeout=timeout, polling=POLL_MS)


LANDING = DEFAULT.name      # the page the app opens on: served at "/", not at "/lesson" ("Page not found")
# Each page's name in the sidebar's navigation, by the page's name (pages/registry.py).
PAGE_TITLES = {page.name: page.title for page in PAGES}


def page_path(name: str) -> str:
    """The URL path of a page by its name: the landing page's is empty."""
    return registered(name).url_path if name else ""


def open_view(context, url: str, path: str = "", **parameters):
    """A new tab on a deep link (`/path?model=…&sentence=…`), returned once everything on it is drawn."""
    from urllib.parse import urlencode

    page = context.new_page()
    page.goto(f"{url}/{page_path(path)}?{urlencode(parameters)}")
    page.get_by_label("English sentence").first.wait_for(timeout=120_000)
    settle(page)
    return page


def query_parameters(page) -> dict[str, str]:
    """The page's URL query as a dict."""
    from urllib.parse import parse_qs, urlparse

    return {key: values[0] for key, values in parse_qs(urlparse(page.url).query).items()}
