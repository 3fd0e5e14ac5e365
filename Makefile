# rlvr-recipes: set-up, tests, the embedded default run and benchmarks.
#   make setup       create .venv and install the package with verl 0.9.1 (CPU torch 2.13.0)
#   make test        the whole test suite (unit, property, config, launcher, trainer-extension and e2e tests)
#   make test-fast   everything not marked e2e (no run of verl's trainer)
#   make quickstart  the embedded default: GRPO with verl's real trainer on the CPU (launch/quickstart.sh)
#   make toy         every method on the toy bandit and the prompt-population simulator (runs/toy)
#   make bench       benchmarks against verl's own functions

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup test test-fast quickstart toy bench clean

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -ra

test-fast: $(STAMP)
	$(PY) -m pytest -q -ra -m "not e2e"

quickstart:
	bash launch/quickstart.sh

toy: $(STAMP)
	$(PY) -W ignore -m recipes.toy.report --out runs/toy

bench: $(STAMP)
	$(PY) benchmarks/bench_core.py
	$(PY) benchmarks/bench_estimators.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .hypothesis runs
