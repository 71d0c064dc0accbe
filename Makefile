# One command sets everything up and runs the demo; one sets up and runs the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: setup demo test bench bench-quick lint

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $@

setup: $(VENV)/.installed

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy dbt bench

test: lint
	$(PY) -m pytest

demo: setup
	$(PY) -m bench.demo

bench: setup
	$(PY) -m bench.run --rows 2000000 --files 1000

bench-quick: setup
	$(PY) -m bench.run --quick
