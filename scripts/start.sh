#!/usr/bin/env bash
# Install what is needed, then open the explorer on the bundled 8-head model at http://localhost:8501.
# It listens on this machine only (127.0.0.1): nobody else on the network reaches it.
# Share it with a class or a lab: `bash scripts/start.sh --serve [--port N] [--models DIR ...]` (pages/launch.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m explorer.pages.launch "$@"
