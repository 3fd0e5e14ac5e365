#!/usr/bin/env bash
# The embedded default: set up .venv (CPU torch 2.13.0 + verl 0.9.1 + this package), then run every estimator of the
# package through the toy softmax bandit and the prompt-population simulator, writing plots and tables.
#   bash launch/quickstart.sh [OUT_DIR]        (default: runs/quickstart)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-runs/quickstart}"
echo "== setting up .venv (first run: a few minutes)"
make --no-print-directory setup
echo "== running the toy bandit and the simulator for every method -> ${out}"
.venv/bin/python -W ignore -m recipes.toy.report --out "${out}"
echo "== done: ${out}/bandit.png ${out}/simulator.png ${out}/toy_report.md"
