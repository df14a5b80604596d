#!/usr/bin/env bash
# Recompute the analyses a bundled checkpoint ships:
#   head_roles.json       positional / rare-token / confidence on Multi30k val (in-domain), syntactic on EWT dev trees
#   head_importance.json  gradient importance per sentence + one-head ablation, on Multi30k val
#   head_pruning_curve.json  out-of-sample: importance from val, BLEU on test_2016_flickr (10 points, 3 random
#                         orders, both normalisations of the importance order)
#   head_evolution.json   (with a snapshot folder) every head's statistics after every training epoch, on val
#
#   bash scripts/ship_analyses.sh models/en-de-h8 [TRAINING_STATE_FOLDER]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: ship_analyses.sh MODEL_DIR [SNAPSHOT_DIR]}
snapshots=${2:-}
data=${ATTENTION_EXPLORER_DATA:-explorer/data}      # the corpora the project ships (explorer/settings.py)
val_en=$data/multi30k/val.en.gz val_de=$data/multi30k/val.de.gz
test_en=$data/multi30k/test_2016_flickr.en.gz test_de=$data/multi30k/test_2016_flickr.de.gz
python=${PYTHON:-.venv/bin/python}

write() {  # write FILE COMMAND...: the command's stdout becomes FILE only if it succeeds
  local file=$1; shift
  "$@" > "$model/$file.tmp" && mv "$model/$file.tmp" "$model/$file"
}
write head_roles.json $python -m explorer roles --model "$model" --text $val_en --conllu $data/ud/en_ewt-ud-dev.conllu.gz --json
write head_importance.json $python -m explorer importance --model "$model" --src $val_en --ref $val_de --json
write head_pruning_curve.json $python -m explorer prune-curve --model "$model" --src $test_en --ref $test_de \
  --steps 10 --seeds 3 --compare-normalisations --json
if [ -n "$snapshots" ]; then
  write head_evolution.json $python -m explorer evolution --model "$model" --snapshots "$snapshots" --text $val_en
fi
echo "wrote the analyses of $model"
