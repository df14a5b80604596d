"""Nothing leaves the machine when the explorer starts (issue 47): the README's serve command (pages/launch.py
--serve, as start.sh runs it) starts the server with an audit hook that records every host it resolves and every
address it connects or sends to (sitecustomize, so it survives the launcher's exec into Streamlit); each must be
this machine. Plain `streamlit run` asks checkip.amazonaws.com for the external IP at a headless start, and logs
"Did not auto detect external IP" where there is no network: pages/streamlit_offline.py answers it."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.browser.harness import free_port
from tests.conftest import ROOT

AUDIT = """
import json, os, sys
_log = open(os.environ["EXPLORER_NET_LOG"], "a", buffering=1)
_EVENTS = {"socket.getaddrinfo": 0, "socket.gethostbyname": 0, "socket.gethostbyname_ex": 0,
           "socket.connect": 1, "socket.connect_ex": 1, "socket.sendto": 1, "socket.sendmsg": 1}
def _audit(event, args):
    if event in _EVENTS:
        _log.write(json.dumps([event, repr(args[_EVENTS[event]])]) + "\\n")
sys.addaudithook(_audit)
_log.write(json.dumps(["started", repr(sys.orig_argv)]) + "\\n")
"""

LOCAL_NAMES = {"localhost", "0.0.0.0", "::", "", "None", socket.gethostname()}


def is_local(target: str) -> bool:
    """A recorded host or address ("'127.0.0.1'", "('127.0.0.1', 8501)", "b'localhost'") is this machine."""
    text = target.strip("()").split(",")[0].strip().strip("'\"").removeprefix("b'").strip("'")
    if text in LOCAL_NAMES or text.startswith("/"):           # a name of this machine, or a Unix socket's path
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


@pytest.mark.slow
def test_the_serve_command_contacts_no_address_outside_the_machine(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(AUDIT)
    log, net_log, port = tmp_path / "server.log", tmp_path / "net.jsonl", free_port()
    environment = {**os.environ, "EXPLORER_NET_LOG": str(net_log), "PYTHONUNBUFFERED": "1",
                   "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    with open(log, "w") as output:
        server = subprocess.Popen([sys.executable, "-m", "explorer.pages.launch", "--serve", "--port", str(port),
                                   "--server.fileWatcherType", "none"],
                                  cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 90
        while True:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            assert server.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.3)
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()
        time.sleep(2)                     # the banner's lookups run after the server is up
    finally:
        server.terminate()
        server.wait(timeout=30)
    records = [json.loads(line) for line in net_log.read_text().splitlines()]
    started = [target for event, target in records if event == "started"]
    assert any("explorer.pages.launch" in argv for argv in started)                  # the hook ran in the launcher …
    assert any("explorer.pages.streamlit_offline" in argv for argv in started[1:])        # … and in Streamlit
    records = [record for record in records if record[0] != "started"]
    outside = [(event, target) for event, target in records if not is_local(target)]
    assert outside == [], outside
    text = log.read_text()
    assert "Did not auto detect external IP" not in text and "External URL" not in text
    assert f"URL: http://{socket.gethostname()}:{port}" in text


def test_the_hook_records_a_lookup(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(AUDIT)
    net_log = tmp_path / "net.jsonl"
    subprocess.run([sys.executable, "-c", "import socket; socket.getaddrinfo('localhost', 80)"], check=True,
                   env={**os.environ, "EXPLORER_NET_LOG": str(net_log), "PYTHONPATH": str(tmp_path)})
    assert ["socket.getaddrinfo", "'localhost'"] in [json.loads(line) for line in net_log.read_text().splitlines()]


def test_the_check_itself_sees_an_outside_address():
    assert not is_local("('checkip.amazonaws.com', 80)") and not is_local("('8.8.8.8', 1)")
    assert is_local("('127.0.0.1', 8501)") and is_local("'localhost'") and is_local("('::1', 80, 0, 0)")
