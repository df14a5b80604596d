#!/usr/bin/env bash
# Recompute the analyses a bundled checkpoint ships: head roles (EWT dev trees), head importance (Multi30k
# val, gradient + one-head ablation) and the pruning curve (first 500 val pairs, 10 points, 3 random seeds).
#   bash scripts/ship_analyses.sh models/en-de-h8
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: ship_analyses.sh MODEL_DIR}
data=../shared/data
python=${PYTHON:-.venv/bin/python}
$python -m explorer roles --model "$model" --conllu $data/ud/en_ewt-ud-dev.conllu.gz --json > "$model/head_roles.json.tmp"
mv "$model/head_roles.json.tmp" "$model/head_roles.json"
$python -m explorer importance --model "$model" --src $data/multi30k/val.en.gz --ref $data/multi30k/val.de.gz --json \
  > "$model/head_importance.json.tmp"
mv "$model/head_importance.json.tmp" "$model/head_importance.json"
$python -m explorer prune-curve --model "$model" --src $data/multi30k/val.en.gz --ref $data/multi30k/val.de.gz \
  --limit 500 --steps 10 --seeds 3 --json > "$model/head_pruning_curve.json.tmp"
mv "$model/head_pruning_curve.json.tmp" "$model/head_pruning_curve.json"
echo "wrote $model/head_roles.json, head_importance.json, head_pruning_curve.json"
