#!/usr/bin/env bash
# Install what is needed, then open the explorer on the bundled 8-head model at http://localhost:8501.
# It listens on this machine only (127.0.0.1): nobody else on the network reaches it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run pages/app.py --server.address 127.0.0.1 --server.headless true \
    --browser.gatherUsageStats false "$@"
