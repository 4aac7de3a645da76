# Two commands for a fresh machine (see README):  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lancefmt-installed
BASE   := $(VENV)/.lancefmt-base
SPARK  := $(VENV)/.lancefmt-spark
PYTEST_ARGS ?= -n 2

.PHONY: setup build build-spark lint test demo demo-metadata bench bench-spark fuzz clean

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

# The package's layers and its freedom from import cycles (contracts in pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/lint-imports

test: build lint
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

# Fuzz every untrusted-input entry point SECONDS seconds each (atheris), one after the other at
# low priority; findings land in fuzz/findings/ (keep minimized ones in fuzz/regressions/).
SECONDS ?= 60
FUZZ_TARGETS ?= manifest transaction deletion_arrow deletion_bin rowids file_v2_0 file_v2_1 refs dataset metadata
fuzz: build
	$(PY) -m fuzz.seeds fuzz/corpus
	for t in $(FUZZ_TARGETS); do \
		nice -n 19 $(PY) -m fuzz.run $$t fuzz/corpus -max_total_time=$(SECONDS) -print_final_stats=1 || exit 1; \
	done
	# seeded byte flips and truncations of real pylance 2.1/2.2 files (a few seconds in `make test`)
	LANCEFMT_FUZZ_SECONDS=$(SECONDS) nice -n 19 $(PY) -m pytest -p no:xdist -q tests/interop/test_file_fuzz_v21.py

clean:
	rm -rf build dist *.egg-info lancefmt/_proto/*_pb2.py
	find lancefmt -name '*.so' -delete -o -name '*.c' -delete
