"""Models by hub id, against a stand-in for the Hugging Face hub on 127.0.0.1 (HF_ENDPOINT) serving a tiny GPT-2's
files: the first local run downloads into the Hugging Face cache, the second reads the cache and asks the hub for
no file, offline (HF_HUB_OFFLINE=1, --offline) and a served explorer refuse in one line, a mistyped folder is told
that it does not exist. Each run is a fresh process: huggingface_hub reads HF_ENDPOINT when it is imported."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.hugging_face_models import saved_model

REPO = "tiny-org/tiny-gpt2"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class StandInHub:
    """Just enough of the hub's HTTP interface for huggingface_hub's model_info and snapshot_download."""

    def __init__(self, folder: Path) -> None:
        self.files = {path.relative_to(folder).as_posix(): path.read_bytes()
                      for path in sorted(folder.rglob("*")) if path.is_file()}
        self.files["pytorch_model.bin"] = b"pickle: never to be downloaded"
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_HEAD(self) -> None:
                hub.answer(self, body=False)

            def do_GET(self) -> None:
                hub.answer(self, body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def blob(self, name: str) -> str:
        return hashlib.sha1(self.files[name]).hexdigest()

    def answer(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        path = urlparse(handler.path).path
        self.requests.append(f"{handler.command} {path}")
        resolve = f"/{REPO}/resolve/"
        if path.startswith(f"/api/models/{REPO}/tree/"):
            listing = [{"type": "file", "path": name, "size": len(data), "oid": self.blob(name)}
                       for name, data in self.files.items()]
            return self.send(handler, json.dumps(listing).encode(), "application/json", body)
        if path in (f"/api/models/{REPO}", f"/api/models/{REPO}/revision/main", f"/api/models/{REPO}/revision/{COMMIT}"):
            info = {"id": REPO, "modelId": REPO, "sha": COMMIT, "private": False,
                    "siblings": [{"rfilename": name, "size": len(data), "blobId": self.blob(name)}
                                 for name, data in self.files.items()]}
            return self.send(handler, json.dumps(info).encode(), "application/json", body)
        if path.startswith(resolve):
            name = path[len(resolve):].split("/", 1)[1]
            if name in self.files:
                return self.send(handler, self.files[name], "application/octet-stream", body,
                                 {"X-Repo-Commit": COMMIT, "ETag": f'"{self.blob(name)}"'})
        handler.send_response(404)
        handler.send_header("X-Error-Code", "RepoNotFound" if "/api/models/" in path else "EntryNotFound")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    @staticmethod
    def send(handler, data: bytes, kind: str, body: bool, headers: dict | None = None) -> None:
        handler.send_response(200)
        for key, value in {"Content-Type": kind, "Content-Length": str(len(data)), **(headers or {})}.items():
            handler.send_header(key, value)
        handler.end_headers()
        if body:
            handler.wfile.write(data)

    def downloads(self) -> list[str]:
        return [request for request in self.requests if request.startswith("GET") and "/resolve/" in request]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    stand_in = StandInHub(saved_model("gpt2", tmp_path_factory))
    yield stand_in
    stand_in.server.shutdown()


def run(hub: StandInHub, cache: Path, code: str, **environment: str) -> subprocess.CompletedProcess:
    inherited = {key: value for key, value in os.environ.items() if key != "HF_HUB_OFFLINE"}
    env = {**inherited, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(cache), "HF_HUB_DISABLE_TELEMETRY": "1",
           **environment}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)


LOAD = ("import explorer\n"
        f"model = explorer.load({REPO!r})\n"
        "print(model.device, len(explorer.trace_sentence(model, 'a dog runs').steps))\n")


@pytest.mark.slow
def test_a_hub_id_is_downloaded_once_then_read_from_the_cache(hub, tmp_path):
    first = run(hub, tmp_path, LOAD)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] == "cpu" and int(first.stdout.split()[1]) >= 1
    # One line saying what and how much, before huggingface_hub's progress bar.
    announced = [line for line in first.stderr.splitlines() if line.startswith(f"Downloading {REPO}")]
    size_mb = sum(len(data) for name, data in hub.files.items() if name != "pytorch_model.bin") / 1e6
    assert len(announced) == 1 and f"{size_mb:,.1f} MB" in announced[0], first.stderr
    fetched = hub.downloads()
    assert any(request.endswith("/model.safetensors") for request in fetched)
    assert not any(request.endswith(".bin") for request in fetched)            # never the pickle weights
    snapshot = tmp_path / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots" / COMMIT
    assert (snapshot / "model.safetensors").is_file() and not (snapshot / "pytorch_model.bin").exists()

    asked = len(hub.requests)
    second = run(hub, tmp_path, LOAD)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout and "Downloading" not in second.stderr
    assert hub.requests[asked:] == []                                           # the cache, and no request at all


@pytest.mark.slow
def test_offline_and_served_runs_refuse_in_one_line_and_ask_the_hub_nothing(hub, tmp_path):
    asked = len(hub.requests)
    offline = run(hub, tmp_path, LOAD, HF_HUB_OFFLINE="1")
    assert offline.returncode != 0
    assert f"{REPO}: not a folder, and no copy of this Hugging Face model is in the local cache" in offline.stderr
    assert "offline" in offline.stderr
    command = subprocess.run([sys.executable, "-m", "explorer", "translate", "--model", REPO, "--offline", "a dog"],
                             env={**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path)},
                             capture_output=True, text=True, timeout=120)
    assert command.returncode == 1 and command.stderr.count("\n") == 1 and command.stderr.startswith("error: ")
    assert "offline" in command.stderr
    # A served explorer's sessions open models without downloading (pages/components/caches.py).
    served = run(hub, tmp_path, "from explorer.pages.components.caches import SERVICE\n"
                                "from explorer.service import ModelRef\n"
                                f"SERVICE.model(ModelRef({REPO!r}, 0.0))\n", ATTENTION_EXPLORER_SERVE="1")
    assert served.returncode != 0 and "a served explorer downloads nothing for its visitors" in served.stderr
    assert hub.requests[asked:] == []


def test_a_mistyped_folder_is_told_it_does_not_exist(tmp_path, monkeypatch):
    from explorer.models.checkpoint import CheckpointError
    from explorer.models.loader import open_model

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    for mistyped in ("./models/en-de-h9", "models/en-de-h9", str(tmp_path / "nowhere")):
        with pytest.raises(CheckpointError, match=r"^.*en-de-h9: no such folder$|^.*nowhere: no such folder$"):
            open_model(mistyped, download=True)


def test_the_device_is_checked_and_auto_is_the_cpu_here():
    import torch

    from explorer.models.checkpoint import CheckpointError
    from explorer.models.loader import open_model, resolve_device

    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(CheckpointError, match="not a device"):
        resolve_device("gpu please")
    if not torch.cuda.is_available():
        with pytest.raises(CheckpointError, match="torch sees no CUDA GPU"):
            open_model("en-de-h8", device="cuda")
