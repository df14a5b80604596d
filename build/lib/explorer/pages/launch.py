"""Start the explorer (scripts/start.sh runs this once the packages are installed).

    bash scripts/start.sh                      # this machine only: http://localhost:8501
    bash scripts/start.sh --serve [--port N] [--models DIR_OR_HUB_ID ...] [--workers N] [--ray-address HOST:PORT]
                          [--jobs N] [--upload-mb N] [--token TEXT | --no-token]

--serve listens on every interface and makes the explorer read-only for visitors (pages/components/access.py): the bundled
models and those named here, bundled corpora or uploads, Ray as set here, corpus jobs queued, and a link with an
access token (printed below; a fresh one each start unless --token gives one). Any other option (e.g.
--server.port, --theme.base) goes on to `streamlit run`.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
from pathlib import Path

from explorer.models.loader import looks_like_hub_id
from explorer.pages.components import access

APP = Path(__file__).with_name("app.py")


def parse(argv: list[str], prog: str = "start.sh") -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", action="store_true", help="share it: listen on every interface, read-only visitors")
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--models", nargs="+", default=[], metavar="DIR_OR_HUB_ID",
                        help="models offered beside the bundled ones: folders, or hub ids (downloaded now, before "
                             "serving, when not in the Hugging Face cache)")
    parser.add_argument("--device", default="auto", metavar="{cpu,cuda,auto}",
                        help="where the models run: cpu, cuda (or cuda:N), or auto, a GPU when torch sees one")
    parser.add_argument("--offline", action="store_true", help="download nothing (as HF_HUB_OFFLINE=1)")
    parser.add_argument("--workers", type=int, default=1, help="Ray workers for corpus jobs (served: visitors cannot)")
    parser.add_argument("--ray-address", default="", help="a Ray cluster for corpus jobs (default: a local Ray)")
    parser.add_argument("--jobs", type=int, default=1, help="corpus jobs running at once when served; the rest queue")
    parser.add_argument("--upload-mb", type=int, default=20, help="largest corpus upload when served, in MB")
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--token", default="", help="the access token (default when served: a fresh random one)")
    tokens.add_argument("--no-token", action="store_true", help="served without a token: anyone who reaches it")
    options, passed_on = parser.parse_known_args(argv)
    for number in ("workers", "jobs", "upload_mb"):
        if getattr(options, number) < 1:
            parser.error(f"--{number.replace('_', '-')} {getattr(options, number)}: must be at least 1")
    for model in options.models:
        if not (Path(model).expanduser().is_dir() or looks_like_hub_id(model)):
            parser.error(f"--models {model}: no such folder (nor a hub id such as Helsinki-NLP/opus-mt-en-de)")
    return options, passed_on


def fetch_named_models(options: argparse.Namespace) -> None:
    """Hub ids the host named, downloaded now into the Hugging Face cache (once), where the host sees the progress:
    a served explorer downloads nothing for a visitor. Also checks --device before the server starts."""
    from explorer.models.errors import ExplorerError
    from explorer.models.loader import hub_folder, resolve_device

    try:
        resolve_device(options.device)
        for model in options.models:
            if not Path(model).expanduser().is_dir():
                hub_folder(model, download=not options.offline)
    except ExplorerError as error:
        sys.exit(f"error: {error}")


def environment(options: argparse.Namespace) -> dict[str, str]:
    """What every session of the server reads (pages/components/access.py)."""
    models = "\n".join(str(Path(m).expanduser().resolve()) if Path(m).expanduser().is_dir() else m
                       for m in options.models)
    if not options.serve:
        return {access.SERVE: "0", access.MODELS: models, access.DEVICE: options.device}
    token = "" if options.no_token else (options.token or secrets.token_urlsafe(16))
    return {access.SERVE: "1", access.MODELS: models, access.TOKEN: token, access.WORKERS: str(options.workers),
            access.RAY_ADDRESS: options.ray_address, access.JOBS: str(options.jobs),
            access.UPLOAD_MB: str(options.upload_mb), access.DEVICE: options.device}


def streamlit_command(options: argparse.Namespace, passed_on: list[str]) -> list[str]:
    address = "0.0.0.0" if options.serve else "127.0.0.1"      # by default nobody else on the network reaches it
    # Streamlit's own start, with no lookup of the machine's external address (pages/streamlit_offline.py); the
    # banner shows the address a person opens.
    shown = socket.gethostname() if options.serve else "localhost"
    command = [sys.executable, "-m", "explorer.pages.streamlit_offline", "run", str(APP), "--server.address", address,
               "--server.port", str(options.port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--browser.serverAddress", shown]
    if options.serve:       # Streamlit refuses larger uploads itself too; no visitor gets "Clear cache" or "Rerun"
        command += ["--server.maxUploadSize", str(options.upload_mb), "--client.toolbarMode", "viewer"]
    return command + passed_on


def link(options: argparse.Namespace, token: str) -> str:
    host = socket.gethostname() if options.serve else "localhost"
    return f"http://{host}:{options.port}/" + (f"?token={token}" if token else "")


def main(argv: list[str] | None = None, prog: str = "start.sh") -> None:
    options, passed_on = parse(sys.argv[1:] if argv is None else argv, prog)
    fetch_named_models(options)
    settings = environment(options)
    if options.offline:
        settings["HF_HUB_OFFLINE"] = "1"
    os.environ.update(settings)
    # One OpenBLAS thread, as one torch thread (pages/app.py): numpy's small products in the analyses waited on a
    # second BLAS thread while the core was busy (a 45-word trace's value norms: 0.2 s in the server, 0.2 ms alone).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if options.serve:
        token = settings[access.TOKEN]
        print(f"Serving the explorer to this network, read-only for visitors. Share this link:\n\n    "
              f"{link(options, token)}\n\n" + ("" if token else "No access token: anyone who reaches this machine "
                                                "can use it.\n"), flush=True)
    os.execv(sys.executable, streamlit_command(options, passed_on))


if __name__ == "__main__":
    main()
