#!/usr/bin/env bash
# Install what is needed (Python packages, Debian's Chromium), then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
exec .venv/bin/python -m pytest -q tests "$@"
