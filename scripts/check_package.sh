#!/usr/bin/env bash
# The package as a user gets it: build the wheel, install it into a fresh virtual environment (its dependencies held
# to requirements.txt's pins, so torch stays the CPU build), then, from a folder that holds its own `models/` and
# `pages/` packages, import explorer, load the bundled en-de-h8, trace a sentence and run the console command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/dist" .
wheel=$(ls "$work"/dist/attention_explorer-*.whl)
echo "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet --constraint requirements.txt "$wheel"
for extra in playwright mkdocs ray pytest; do
  if "$work/venv/bin/python" -m pip show --quiet "$extra" 2>/dev/null; then
    echo "a plain install pulled $extra, which only an extra should" >&2
    exit 1
  fi
done

# A notebook's folder with packages of its own named like the repository's folders.
mkdir -p "$work/notebook/models" "$work/notebook/pages"
echo 'raise ImportError("the notebook'"'"'s own models package: the explorer must never import it")' > "$work/notebook/models/__init__.py"
echo 'raise ImportError("the notebook'"'"'s own pages package")' > "$work/notebook/pages/__init__.py"
cd "$work/notebook"
"$work/venv/bin/python" - <<'PY'
import explorer

model = explorer.load("en-de-h8")
trace = explorer.trace_sentence(model, "A dog runs in the park.")
print(f"en-de-h8 on {model.device}: {trace.output_text!r}, encoder pattern {trace.pattern('encoder').shape}")
assert trace.output_text and str(model.device) == "cpu"
assert "site-packages" in explorer.__file__, explorer.__file__
PY
"$work/venv/bin/attention-explorer" --help > /dev/null
"$work/venv/bin/attention-explorer" translate --model en-de-h8 "Two dogs play in the snow."
"$work/venv/bin/attention-explorer" trace --model digits-vit --image digits:3 --out "$work/digit.npz" > /dev/null
echo "the installed package works from another folder"
