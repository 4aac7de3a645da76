# Two commands for a fresh machine (see README):  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lancefmt-installed
BASE   := $(VENV)/.lancefmt-base
SPARK  := $(VENV)/.lancefmt-spark
PYTEST_ARGS ?= -n 2

.PHONY: setup build build-spark test demo demo-metadata bench bench-spark clean

# the venv with the build requirements of pyproject.toml, so builds can recompile in place
$(BASE): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install "setuptools>=77" wheel "Cython>=3.0.10" "numpy>=2.0" "grpcio-tools>=1.85,<2"
	touch $(BASE)

# what the main job needs: lancefmt and its spark extra (no test or benchmark tools)
$(SPARK): $(BASE)
	$(PY) -m pip install -e '.[spark]'
	touch $(SPARK)

$(STAMP): $(BASE)
	$(PY) -m pip install -e '.[test,spark,bench]'
	touch $(SPARK) $(STAMP)

setup: $(STAMP)

# Regenerates protobuf modules and recompiles Cython extensions changed since the last build.
build: $(STAMP)
	$(PY) setup.py -q build_ext --inplace

build-spark: $(SPARK)
	$(PY) setup.py -q build_ext --inplace

test: build
	$(PY) -m pytest $(PYTEST_ARGS) tests

# The main job: Spark (local[*]) writes, appends, deletes, time-travels, fails over and streams a
# multi-base Lance dataset through lancefmt's data source.  DEMO_ARGS="--rows 500000" for less.
demo: build-spark
	$(PY) examples/pipeline.py $(DEMO_ARGS)

# Metadata inspection of a pylance-written multi-base dataset.
demo-metadata: build
	$(PY) examples/demo.py

bench: build
	cd asv_bench && ../$(PY) -m asv run --python=same --quick --show-stderr

# Spark source/sink vs Spark's Parquet reader/writer, every number in one run, per Lance storage
# version (BENCH_SPARK_ARGS="--versions 2.0 --repeat 5" to choose).
bench-spark: build
	cd asv_bench && ../$(PY) -m benchmarks.spark_source $(BENCH_SPARK_ARGS)

clean:
	rm -rf build dist *.egg-info lancefmt/_proto/*_pb2.py
	find lancefmt -name '*.so' -delete -o -name '*.c' -delete
