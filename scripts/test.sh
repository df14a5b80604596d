#!/usr/bin/env bash
# Install what is needed (Python packages, Debian's Chromium), then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
# Two processes, each with one torch thread: the tests of one xdist group (the browser's, Ray's) stay on one.
exec .venv/bin/python -m pytest -q -n 2 --dist loadgroup tests "$@"
