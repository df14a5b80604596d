#!/usr/bin/env bash
# Install what is needed (Python packages, Debian's Chromium), then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
# Two processes, each with one torch thread: the tests of one xdist group (a browser's, Ray's) stay on one
# (tests/browser/conftest.py). More processes only made the 2 cores busier: 307 s with three, 330 s with four.
exec .venv/bin/python -m pytest -q -n 2 --dist loadgroup tests "$@"
