# Two commands for a fresh machine (see README):  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lancefmt-installed
PYTEST_ARGS ?= -n 2

.PHONY: setup build test demo bench clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# the build requirements of pyproject.toml, so `make build` can recompile in place
	$(PY) -m pip install "setuptools>=77" wheel "Cython>=3.0.10" "numpy>=2.0" "grpcio-tools>=1.85,<2"
	$(PY) -m pip install -e '.[test,spark,bench]'
	touch $(STAMP)

setup: $(STAMP)

# Regenerates protobuf modules and recompiles Cython extensions changed since the last build.
build: $(STAMP)
	$(PY) setup.py -q build_ext --inplace

test: build
	$(PY) -m pytest $(PYTEST_ARGS) tests

demo: build
	$(PY) examples/demo.py

bench: build
	cd asv_bench && ../$(PY) -m asv run --python=same --quick --show-stderr

clean:
	rm -rf build dist *.egg-info lancefmt/_proto/*_pb2.py
	find lancefmt -name '*.so' -delete -o -name '*.c' -delete
