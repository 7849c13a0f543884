# `make demo` and `make test` work on a fresh machine with only python3 and make:
# each creates .venv, installs the package with its dev extras, then runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2

SCALESIM_VENV := .venv-scalesim
SCALESIM_STAMP := $(SCALESIM_VENV)/.installed-stamp

TORCHXLA_VENV := .venv-torchxla
TORCHXLA_STAMP := $(TORCHXLA_VENV)/.installed-stamp

PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed-stamp

# NVIDIA's aiconfigurator (its own pins: pandas, its perf tables) for benchmarks/peers_load.py.
PEERS_LOAD_VENV := .venv-peers-load
PEERS_LOAD_STAMP := $(PEERS_LOAD_VENV)/.installed-stamp

.PHONY: setup scalesim torch-xla demo lint test test-core notebooks calibrate validate bench bench-peers peers-load mutation docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

# SCALE-Sim, the reference for systolic cycle counts, needs numpy<2.3: it gets its own venv,
# and tests/hardware_models/test_systolic.py runs it wherever this venv exists.
$(SCALESIM_STAMP):
	$(PYTHON) -m venv $(SCALESIM_VENV)
	$(SCALESIM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "numpy<2.3" scalesim==3.0.0
	touch $(SCALESIM_STAMP)

scalesim: $(SCALESIM_STAMP)

# The third compilation path, PyTorch through torch-xla (lazy tensors traced into XLA's HLO), needs
# torch 2.9, so it gets its own venv: torch 2.9.0 (PyPI's x86-64 build, with its CUDA libraries:
# about 7 GB) and torch-xla 2.9.0, run on XLA's CPU device. torchxla_side/ drives it as a
# subprocess; its tests are skipped, saying why, where this venv is absent. Not part of `make test`'s
# set-up; .ci/run builds it.
$(TORCHXLA_STAMP):
	$(PYTHON) -m venv $(TORCHXLA_VENV)
	$(TORCHXLA_VENV)/bin/python -m pip install --quiet --disable-pip-version-check torch==2.9.0 torch-xla==2.9.0 "numpy>=2.0" "ml-dtypes>=0.5"
	touch $(TORCHXLA_STAMP)

torch-xla: $(TORCHXLA_STAMP)

# The main job: the Llama-style block through reference, PyTorch and JAX in every dtype (numbers
# agree), then one Llama-3.1-8B layer's two compilation paths (prefill of 2048 tokens, one decode
# step against a 2048-token KV cache) compared on one target per family, files under out/ (--force:
# a second `make demo` replaces the report the first one wrote there).
demo: setup
	@for dtype in float32 bfloat16 float16; do $(BIN)/landscape run block --dtype $$dtype || exit $$?; done
	$(BIN)/landscape compare --out out --force
	@echo "report: out/report.html (open it from disk); HLO dumps, plans, rooflines, traces and report.json are under out/"

# Every test (tests/sides/test_torchxla.py where .venv-torchxla is built: `make torch-xla`; .ci/run
# builds it). The hypothesis `ci` profile (tests/conftest.py) bounds the property tests; their
# examples come from HYPOTHESIS_SEED, printed: by default the commit's hash as a number, so each
# commit draws new examples and a run of the same commit replays them; `make test HYPOTHESIS_SEED=N`.
HYPOTHESIS_SEED ?= $(shell printf '%d' 0x$$(git rev-parse --short=8 HEAD 2>/dev/null || echo 0))
# ruff's lint and its formatter's check (pyproject.toml [tool.ruff]), before the tests: a finding
# fails `make test` in seconds. `$(BIN)/ruff check --fix . && $(BIN)/ruff format .` repairs most.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: setup scalesim lint
	@echo "hypothesis seed $(HYPOTHESIS_SEED) (replay: make test HYPOTHESIS_SEED=$(HYPOTHESIS_SEED))"
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup -p no:cacheprovider --hypothesis-seed=$(HYPOTHESIS_SEED)

# The six lab notebooks (and the agreement notebook), each run top to bottom in a real kernel; they
# are part of `make test` too.
notebooks: setup
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -p no:cacheprovider tests/test_notebooks.py

# Measure this machine (out/calibration/host-cpu.toml), then time the catalogue against the model.
calibrate: setup
	$(BIN)/landscape calibrate host-cpu --out out/calibration

# validate: against make calibrate's file where it has written one, else the committed target
validate: setup
	$(BIN)/python benchmarks/host_cpu_validate.py $(if $(wildcard out/calibration/host-cpu.toml),--target-file out/calibration/host-cpu.toml,)

# The tests that need neither PyTorch nor JAX imported.
test-core: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not torch and not jax"

bench: setup scalesim
	$(BIN)/python benchmarks/run_times.py
	$(BIN)/python benchmarks/lowering_scale.py
	$(BIN)/python benchmarks/systolic_speed.py
	$(BIN)/python benchmarks/calibration_rows.py
	$(BIN)/python benchmarks/estimates.py
	$(BIN)/python benchmarks/predict.py
	$(BIN)/python benchmarks/your_model.py
	$(BIN)/python benchmarks/training_accuracy.py
	$(BIN)/python benchmarks/layer_scaling.py
	$(BIN)/python benchmarks/serving_accuracy.py
	$(BIN)/python benchmarks/serving_load.py
	$(BIN)/python benchmarks/compare_paths.py
	$(BIN)/python benchmarks/cli_times.py

# The peer predictors (GenZ, llm-analysis) at their default efficiencies on every published
# serving row: their pins clash with ours, so they get their own venv; one JSON object on stdout.
$(PEERS_STAMP):
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check genz-llm==0.0.16 llm-analysis==0.2.2
	touch $(PEERS_STAMP)

bench-peers: $(PEERS_STAMP)
	@$(PEERS_VENV)/bin/python benchmarks/peers.py

$(PEERS_LOAD_STAMP):
	$(PYTHON) -m venv $(PEERS_LOAD_VENV)
	$(PEERS_LOAD_VENV)/bin/python -m pip install --quiet --disable-pip-version-check aiconfigurator==0.12.0
	touch $(PEERS_LOAD_STAMP)

# aiconfigurator on the in-flight-batching rows, then the pages and the benchmarks table regenerated.
peers-load: $(PEERS_LOAD_STAMP) setup
	$(PEERS_LOAD_VENV)/bin/python benchmarks/peers_load.py
	$(BIN)/python benchmarks/serving_load.py --render

# Mutation testing, not part of `make test` (about 13 minutes on 2 cores): mutmut mutates
# hardware_models/cost/, hardware_models/passes/ and reference/tolerance.py ([tool.mutmut] in
# pyproject.toml) and runs the tests that need neither PyTorch nor JAX against each mutant, under
# the `mutation` hypothesis profile; mutation_report.py writes the score and every survivor to
# benchmarks/results/ and fails below 90%.
MUTMUT_STAMP := $(VENV)/.mutmut-stamp
$(MUTMUT_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check mutmut==3.8.1
	touch $(MUTMUT_STAMP)

mutation: setup $(MUTMUT_STAMP)
	rm -rf mutants
	HYPOTHESIS_PROFILE=mutation $(BIN)/mutmut run --max-children $(PYTEST_WORKERS) > mutants.log 2>&1 || (tail -c 2000 mutants.log; exit 1)
	$(BIN)/python benchmarks/mutation_report.py --check 90

# The measured tables and figures of docs/, regenerated from benchmarks/results/*.csv (no benchmark
# is rerun: run `make bench` first for new figures); tests/test_docs_fresh.py fails while one is stale.
docs: setup
	$(BIN)/python benchmarks/serving_load.py --render
	$(BIN)/python benchmarks/docs_tables.py

clean:
	rm -rf $(VENV) $(SCALESIM_VENV) $(TORCHXLA_VENV) $(PEERS_VENV) $(PEERS_LOAD_VENV) build *.egg-info .hypothesis mutants mutants.log
