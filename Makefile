# Two commands on a fresh machine with Python 3.11:
#   make report   executes every notebook (quick profile) into the git-ignored build/runs/ and builds
#                 build/findings.md there; PROFILE=full (the prior report's settings) writes into reports/runs/
#                 and rebuilds reports/findings.md and the README table. ONLY=01 runs one notebook.
#   make first-look  times `make report` on a fresh clone of HEAD (reports/first_look.json; the
#                 README's sentence on it is written from that record)
#   make exports  writes every stored model's LiteRT and ONNX files beside its model.keras
#   make book     builds the report as a static site, build/book/index.html, from reports/ (no
#                 notebook is re-run)
#   make test     runs the library tests (layers on TensorFlow, JAX and PyTorch) and every notebook
#                 (nbval, at the smoke profile: one epoch); tests/test_book.py opens the built book in
#                 headless Chromium (skipped without one). CI (.ci/run) runs it. Each pytest session
#                 runs on every core (pytest-xdist; TEST_WORKERS=1 for one worker).
#   make lint     ruff (lint rules and the format check, pyproject.toml) and the import contract of ARCHITECTURE.md
#                 (tests/test_architecture.py); make test runs it first
#   make test-fast  the developer's loop: library tests on TensorFlow without the `slow` ones
#                 (no training longer than a few seconds, no kernels, no notebooks)
#   make jetson-check  (root, x86-64 Debian/Ubuntu) the runtime extra and every recommended artifact on
#                 aarch64 under qemu-user, compared with this install: reports/jetson_check.json
# Both create the virtual environment .venv and install requirements.txt when needed.

PYTHON ?= python3
VENV ?= .venv
PROFILE ?= quick
# notebooks executed at a time by `make report`: one per core (WORKERS=1 for one at a time)
WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
ONLY ?=
BIN := $(VENV)/bin

export TF_CPP_MIN_LOG_LEVEL := 3
export TF_ENABLE_ONEDNN_OPTS := 0

NOTEBOOK_PROFILE ?= smoke
# pytest-xdist workers for `make test` (auto: one per core); a test file, or a notebook, stays on one worker.
# --no-loadscope-reorder: files are handed out in collection order, which tests/conftest.py and
# notebooks/conftest.py start with the longest files (xdist's default, most tests first, left a
# long file with few tests to the end, one core idle meanwhile).
TEST_WORKERS ?= auto
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: report first-look run book exports jetson-check lint test test-fast test-lib test-backends test-notebooks venv clean-runs

venv: $(VENV)/.installed

# uv installs requirements.txt (the same pins as pip would): on a clean clone with cold caches it took
# 1 min 40 s where pip took 9 min 47 s (2026-11-26, the shared 2-core machine; pip's CPU time alone was
# 2 min, uv's 0.5 min). uv does not read pip's configuration, so the package sources pip is configured
# with (`pip config`: index-url, extra-index-url, find-links, e.g. a local CPU-only torch wheel) are
# passed on, and --index-strategy unsafe-best-match picks the best match across them, as pip does.
# The venv keeps its own pip (`python -m venv`) for the tests that build a runtime venv with it.
# --compile-bytecode: uv, unlike pip, writes no .pyc files, and where PYTHONDONTWRITEBYTECODE is set
# (as on the CI machine) Python never writes them either, so every process (each pytest worker,
# notebook kernel and child process) compiled TensorFlow's sources again: `import keras, tensorflow`
# took 13 s instead of 5 s (2026-11-26, 2 cores).
UV_VERSION ?= 0.13.9
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	pipconf() { $(BIN)/python -m pip config get "global.$$1" 2>/dev/null || true; }; \
	sources=$$(for u in $$(pipconf index-url); do echo --index-url "$$u"; done; \
		for u in $$(pipconf extra-index-url); do echo --extra-index-url "$$u"; done; \
		for l in $$(pipconf find-links) $${PIP_FIND_LINKS:-}; do echo --find-links "$$l"; done); \
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --index-strategy unsafe-best-match \
		$$sources \
		-r requirements.txt
	touch $@

run: venv
	$(BIN)/predcalc run --profile $(PROFILE) --workers $(WORKERS) $(if $(ONLY),--only $(ONLY))

report: run
	$(BIN)/predcalc report --profile $(PROFILE)

# A first look timed: `make report` on a fresh clone of HEAD with this environment, into
# reports/first_look.json (the README's numbers on it are rows of reports/claims.csv, checked against it).
first-look: venv
	$(BIN)/python -m predcalc.training.first_look --log build/first_look.log
	$(BIN)/predcalc report --profile full

# Every stored model's artifacts (LiteRT, ONNX, SavedModel), each checked against Keras: git keeps
# them only for the recommended models, so a fresh clone writes the rest with this.
exports: venv
	$(BIN)/predcalc export $(patsubst %/export,%,$(wildcard reports/runs/*/export))

# An arm64 Debian root (debootstrap under qemu-user, built once into JETSON_ROOT, default
# ~/.cache/predcalc/arm64-root), the runtime extra installed there from this tree, and predcalc predict
# and evaluate on the calculator and every recommended LiteRT and ONNX file, on both architectures.
JETSON_ROOT ?=
jetson-check: venv
	PYTHONPATH=$(abspath lib) $(BIN)/python -m predcalc.jetson $(if $(JETSON_ROOT),--root $(JETSON_ROOT))

book: venv
	PYTHONPATH=$(abspath lib) $(BIN)/python -m predcalc.report.book

test: lint test-lib test-backends test-notebooks

lint: venv
	$(BIN)/ruff check lib tests
	$(BIN)/ruff format --check lib tests
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_architecture.py

# Its last line counts the passed and the deselected (slow) tests: pytest-xdist drops the deselected
# count, which tests/conftest.py gathers from the workers.
test-fast: venv
	$(BIN)/python -m pytest -q $(PARALLEL) -m "not slow" tests

test-lib: venv
	$(BIN)/python -m pytest -q $(PARALLEL) --durations=20 tests

# On JAX, XLA's CPU compiler took 70 % of the layer tests' time (500 compilations of tiny graphs in
# test_layer_contract.py: 35 s of its 49 s); without LLVM's optimisation and with the older fusion
# emitters it compiles them in a third of the time. Every test still runs through jit and XLA.
JAX_TEST_XLA_FLAGS ?= --xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false

test-backends: venv
	KERAS_BACKEND=jax XLA_FLAGS="$(JAX_TEST_XLA_FLAGS)" $(BIN)/python -m pytest -q $(PARALLEL) tests/layers
	KERAS_BACKEND=torch $(BIN)/python -m pytest -q $(PARALLEL) tests/layers

# notebooks/conftest.py injects the profile's values (one epoch) into each parameters cell;
# NOTEBOOK_PROFILE= runs the notebooks as written.
test-notebooks: venv
	PREDCALC_NOTEBOOK_PROFILE=$(NOTEBOOK_PROFILE) PATH="$(abspath $(BIN)):$$PATH" \
		$(BIN)/python -m pytest -q $(PARALLEL) --nbval-lax --nbval-current-env \
		--nbval-cell-timeout=900 --durations=15 notebooks
