# Two commands for a fresh machine (see README):  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lancefmt-installed
BASE   := $(VENV)/.lancefmt-base
SPARK  := $(VENV)/.lancefmt-spark
PYTEST_ARGS ?= -n 2

.PHONY: setup build build-spark lint test demo demo-metadata bench bench-spark fuzz compat clean \
	pylance-suite pylance-suite-probe pylance-suite-baseline

# the venv with the build requirements of pyproject.toml, so builds can recompile in place
$(BASE): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install "setuptools>=77" wheel "Cython>=3.0.10" "numpy>=2.0" "grpcio-tools>=1.85,<2"
	touch $(BASE)

# The extensions are compiled once, in place (build_ext --inplace keeps build/ for the next
# incremental build). The editable install runs without build isolation (the venv has the build
# requirements) and reuses those builds (setup.py's build_ext), so it compiles nothing, and pip
# installs only the requirements still missing: `make test` after `make demo` adds the test and
# benchmark tools and builds nothing (tests/test_makefile.py).
INSTALL := $(PY) -m pip install --no-build-isolation

# what the main job needs: lancefmt and its spark extra (no test or benchmark tools)
$(SPARK): $(BASE)
	$(PY) setup.py -q build_ext --inplace
	$(INSTALL) -e '.[spark]'
	touch $(SPARK)

$(STAMP): $(BASE)
	$(PY) setup.py -q build_ext --inplace
	$(INSTALL) -e '.[test,spark,bench]'
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
# low priority, under a 1 GiB address-space cap (a cap hit is a finding); findings land in
# fuzz/findings/ (keep minimized ones in fuzz/regressions/). The targets are fuzz/targets.py's.
SECONDS ?= 60
FUZZ_TARGETS ?= $(shell $(PY) -m fuzz.targets)
fuzz: build
	$(PY) -m fuzz.seeds fuzz/corpus
	for t in $(FUZZ_TARGETS); do \
		nice -n 19 $(PY) -m fuzz.run $$t fuzz/corpus -max_total_time=$(SECONDS) -print_final_stats=1 || exit 1; \
	done
	# every integer of the seeds' file and manifest metadata set to extremes, one at a time
	nice -n 19 $(PY) -m fuzz.int_probe fuzz/corpus
	# seeded byte flips and truncations of real pylance 2.1/2.2 files (a few seconds in `make test`)
	LANCEFMT_FUZZ_SECONDS=$(SECONDS) nice -n 19 $(PY) -m pytest -p no:xdist -q tests/interop/test_file_fuzz_v21.py

# Rebuild the compat fixtures (tests/compat/fixtures): a venv per old pylance release
# (COMPAT_VENVS, pylance + the pyarrow of its era), generate.py run in each, then lancefmt
# deletes/appends/compacts every fixture and each old release reads the result back.
COMPAT_VENVS ?= .compat-venvs
# (0.13-v2: pylance 0.13 asked for its early 2.0 files)
COMPAT_RELEASES ?= 0.10 0.13-v2 0.16 0.20 0.25 0.33 0.39 2.0 9.0
compat: build
	for r in $(COMPAT_RELEASES); do VENVS=$(COMPAT_VENVS) bash tests/compat/make_venvs.sh $${r%-*} || exit 1; done
	for r in $(COMPAT_RELEASES); do \
		opts=$$(case $$r in 0.13-v2) echo use_legacy_format=false;; esac); \
		LANCE_LOG=error $(COMPAT_VENVS)/pylance-$${r%-*}/bin/python tests/compat/generate.py \
			tests/compat/fixtures/$$r $$opts || exit 1; \
	done
	LANCE_LOG=error $(PY) tests/compat/roundtrip.py --venvs $(COMPAT_VENVS) --out build/compat $(COMPAT_RELEASES)
	LANCE_LOG=error $(PY) -m pytest -p no:xdist -q tests/compat

# Lance's own Python tests (lancedb/lance python/python/tests, taken from the git directory
# LANCE_GIT_DIR at run time, never copied here) on lancefmt, against the stored baseline of
# those passing on pylance (tools/pylance_suite/baseline.json); docs/pylance-suite.md.
# SUITE_ARGS="--set index", "--set table", "test_dataset.py", "--lancefmt-path ../other-wt" ...
LANCE_GIT_DIR ?= /work/.mirror/lancedb+lance/repo
SUITE_ARGS ?=
pylance-suite: build
	$(PY) -m tools.pylance_suite --impl lancefmt --git-dir $(LANCE_GIT_DIR) $(SUITE_ARGS)

# The index files with what lancefmt lacks replaced by placeholders: each test's first missing
# thing (a to-do list; never counted as lancefmt's result).
pylance-suite-probe: build
	$(PY) -m tools.pylance_suite --impl lancefmt --probe --set index --git-dir $(LANCE_GIT_DIR) $(SUITE_ARGS)

# Run the tests on pylance and rewrite the baseline (after moving LANCE_GIT_DIR or pylance).
pylance-suite-baseline: build
	$(PY) -m tools.pylance_suite --impl pylance --write-baseline --git-dir $(LANCE_GIT_DIR) $(SUITE_ARGS)

clean:
	rm -rf build dist *.egg-info lancefmt/_proto/*_pb2.py
	find lancefmt -name '*.so' -delete -o -name '*.c' -delete
