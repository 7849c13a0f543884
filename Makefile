# `make demo` and `make test` work on a fresh machine with only python3 and make:
# each creates .venv, installs the package with its dev extras, then runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2

.PHONY: setup demo test test-core bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

# The main job, for now: the Llama-style block through reference, PyTorch and JAX in every dtype.
demo: setup
	@for dtype in float32 bfloat16 float16; do $(BIN)/landscape run block --dtype $$dtype || exit $$?; done

# Every test. The hypothesis `ci` profile (tests/conftest.py) bounds the property tests.
test: setup
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -p no:cacheprovider

# The tests that need neither PyTorch nor JAX imported.
test-core: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not torch and not jax"

bench: setup
	$(BIN)/python benchmarks/run_times.py

clean:
	rm -rf $(VENV) build *.egg-info .hypothesis
