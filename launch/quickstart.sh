#!/usr/bin/env bash
# The embedded default: verl's real trainer (python -m verl.trainer.main_ppo) on this machine's CPU, with a tiny
# model and an addition task built locally (nothing is downloaded), for any method of this package.
#   bash launch/quickstart.sh [METHOD] [--steps N] [--ranks R] [-- KEY=VALUE ...]
# METHOD: grpo (default), dapo, drgrpo, gspo, gspo_n, any estimator (agrae, avspo, grpo_n, ...), cw_grpo, aapo.
# First run: creates .venv (torch 2.13.0 CPU, verl 0.9.1, this package; a few minutes) and builds the tiny model
# with a short supervised warm start (under a minute). Then about 90 s of start-up and 3-6 s per step on 2 cores.
# Writes runs/quickstart/METHOD/{train.log,metrics.jsonl,curves.png}; see docs/cpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."

method="grpo"
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then
  method="$1"
  shift
fi

echo "== setting up .venv (first run: a few minutes)"
make --no-print-directory setup

echo "== training '${method}' with verl's trainer on the CPU"
# The runner stops the trainer itself after --timeout seconds (default 1800); this is the outer guard.
exec timeout --signal=INT --kill-after=60 3600 .venv/bin/python -m recipes.tiny.run train "${method}" "$@"
