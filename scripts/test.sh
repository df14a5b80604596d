#!/usr/bin/env bash
# Install what is needed (Python packages, Debian's Chromium), then run every test.
# --fast: the fast tier (the interface contract, hooks, capture and every analysis's numbers on tiny models, a smoke
# run of every page): every test not marked slow, browser or ray (pyproject.toml's markers), and no Chromium to
# install. Other arguments go to pytest (`bash scripts/test.sh --fast -k lesson`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fast" ]; then
  shift
  bash scripts/setup.sh
  set -- -m "not slow and not browser and not ray" --ignore=tests/browser "$@"
else
  bash scripts/setup.sh --browser
fi
# A process a core (two here, at most four), each with one torch thread: the tests of one xdist group (a browser's,
# Ray's) stay on one (tests/browser/conftest.py). More processes than cores only made the 2 cores here busier (307 s
# with three, 330 s with four); the suite is CPU-bound, so a machine with more cores finishes sooner.
workers=$(nproc)
workers=$(( workers < 2 ? 2 : workers > 4 ? 4 : workers ))
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadgroup tests "$@"
