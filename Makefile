# nugget-pipeline: the two commands of the README are `make run` and `make test`.
# Both set up a fresh clone idempotently (venv + pinned CPU torch) before working.
#   make run  [ARGS="nugget.ratio=0.25 ..."]   local Ray head on 127.0.0.1 + ray job submit
#                                              (ARGS="--verbose": the libraries' bars and INFO lines too)
#   make test [PYTEST_ARGS="-k cache"]         the test suite (CPU, hermetic)
#   make gpu-test [GPU_PYTHON=python]          the `gpu` tests, in an environment with CUDA torch
#   make gpu-check [GPU_PYTHON=python]         on a CUDA machine, everything a GPU is lent for: the GPU benchmarks,
#                                              the `gpu` tests, a short profile=gpu1 of every stage, within
#                                              ~25 min, into benchmarks/results/gpu/<UTC date>/ (DRY_RUN=1: the plan)
#   make gpu-check-plan                        the lent GPU machine's three back-to-back calls: command, carry,
#                                              timeout each, checked against the machine's limits
#   make gpu-check-pack [GPU_WHEELS=dir]       the folders those calls carry (.gpu-check/carry1..3): the wheels
#                                              the GPU image lacks, the gpu1 sources, the SmolLM2 stand-in
#   make cluster-test                          the `cluster` test: 3 Ray nodes, S3 (moto) and an MLflow
#                                              server on 127.0.0.1, a cut of the DAG (~10 min; not in make test)
#   make rehearse PROFILE=paper|gpu1 [ARGS=]   that GPU profile's whole DAG on CPU at rehearsal sizes,
#                                              on local fixtures; fails unless every stage ran, no
#                                              traceback, every report table measured (docs/rehearsal.md)
#   make mlflow-ui                             MLflow UI on http://127.0.0.1:5000
#   make ray-stop                              stop the local Ray head started by `make run`

SHELL      := /bin/bash
PYTHON     ?= python3
VENV       ?= .venv
PY         := $(VENV)/bin/python
BIN        := $(abspath $(VENV))/bin
STAMP      := $(VENV)/.installed
ARGS       ?=
PYTEST_ARGS ?=
# gpu-test runs in an environment that has CUDA torch and the project installed (README
# "GPU"), never in $(VENV): its CPU-pinned torch sees no GPU
GPU_PYTHON ?= python3
# refuses to start where torch sees no GPU (gpu-test, gpu-check)
NEED_CUDA   = $(GPU_PYTHON) -c 'import sys, torch; torch.cuda.is_available() or sys.exit("$@: torch " + torch.__version__ + " in " + sys.executable + " sees no CUDA device (set GPU_PYTHON)")'
GPU_CHECK_OUT ?= benchmarks/results/gpu/$(shell date -u +%Y-%m-%d)
# wheels pack takes (a cache: what it lacks is downloaded into it for the GPU image's Python)
GPU_WHEELS ?= .gpu-check/wheels
DRY_RUN    ?=
RAY_PORT   ?= 6379
DASH_PORT  ?= 8265
MLFLOW_PORT ?= 5000
# the dashboard agent's default port (52365) is also taken by any local ray.init():
# a free port, picked when the head starts, avoids a head whose job agent cannot bind
AGENT_PORT ?= $(shell $(PYTHON) -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export NUGGET_ARTIFACT_ROOT ?= $(HOME)/nugget-artifacts
export NUGGET_SOURCES_DIR   ?= $(HOME)/.cache/nugget-pipeline/sources
# `ray start` prints a ~35-line banner: it goes here, the log says where in one line
RAY_START_LOG ?= $(NUGGET_ARTIFACT_ROOT)/logs/ray-start.log
# Ray token auth: with RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, a file holding it) in the
# environment, the head starts with RAY_AUTH_MODE=token and every ray command below presents
# the token (Ray reads both variables itself; they are exported, never put on a command
# line, where `ps` would show them). Without one: RAY_AUTH_MODE=disabled, and any local user
# can submit jobs, i.e. run code as you, on the dashboard port (README "Running on a cluster")
RAY_AUTH_MODE ?= $(if $(RAY_AUTH_TOKEN)$(RAY_AUTH_TOKEN_PATH),token,disabled)
export RAY_AUTH_MODE
ifneq ($(RAY_AUTH_TOKEN),)
export RAY_AUTH_TOKEN
endif
ifneq ($(RAY_AUTH_TOKEN_PATH),)
export RAY_AUTH_TOKEN_PATH
endif
# local Ray: loopback only (docs/environment-notes.md). No Ray Train preemption watcher: one
# node cannot be preempted, and the watcher is one more actor process per fit (clusters
# started from ray_cluster.yaml keep it)
RAY_ENV    := PATH=$(BIN):$$PATH RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 \
              RAY_TRAIN_ENABLE_PREEMPTION_WATCHER=0

.PHONY: install run test rehearse cluster-test gpu-test gpu-check gpu-check-plan gpu-check-pack sources mlflow-ui ray-start ray-stop lint clean-artifacts

install: $(STAMP)

$(STAMP): pyproject.toml constraints-cpu.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 needed, found " + sys.version' \
	  || { echo "set PYTHON=python3.11 (or newer)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -c constraints-cpu.txt -e '.[dev]'
	@# pip byte-compiles every module on one core (~120 s of the ~170 s install); compileall
	@# uses every core. The bytecode matters: with PYTHONDONTWRITEBYTECODE set, an uncompiled
	@# venv recompiles torch in every process. Like pip, ignore modules this Python cannot
	@# compile (torch's py312_intrinsics.py).
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null || true
	touch $(STAMP)

# apt-get download needs package lists; a fresh machine may have none yet
sources: $(STAMP)
	@ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ]; then apt-get update -qq; else sudo apt-get update -qq; fi; }
	$(PY) -m stages.sources fetch --dir $(NUGGET_SOURCES_DIR)

# `ray status` against a port nobody listens on retries for ~43 s (measured): ask it only
# when something accepts connections there
PORT_OPEN = $(PY) -c 'import socket, sys; sys.exit(socket.socket().connect_ex(("127.0.0.1", $(RAY_PORT))))'

ray-start: $(STAMP)
	@if $(PORT_OPEN) && $(RAY_ENV) $(BIN)/ray status --address 127.0.0.1:$(RAY_PORT) >/dev/null 2>&1; then \
	  echo "Ray head already running on 127.0.0.1:$(RAY_PORT)"; \
	else \
	  mkdir -p $(dir $(RAY_START_LOG)); \
	  echo "starting a Ray head on 127.0.0.1:$(RAY_PORT), RAY_AUTH_MODE=$(RAY_AUTH_MODE) (its output: $(RAY_START_LOG))"; \
	  $(RAY_ENV) $(BIN)/ray start --head --node-ip-address=127.0.0.1 --port=$(RAY_PORT) \
	    --dashboard-host=127.0.0.1 --dashboard-port=$(DASH_PORT) --num-cpus=$$(nproc) \
	    --dashboard-agent-listen-port=$(AGENT_PORT) \
	    --disable-usage-stats >$(RAY_START_LOG) 2>&1 \
	  || { tail -n 30 $(RAY_START_LOG); echo "ray start failed; full output: $(RAY_START_LOG)"; exit 1; }; \
	fi

# a just-started head can refuse jobs for a few seconds ("No available agent"): retry
run: $(STAMP) sources ray-start
	@log=$$(mktemp); for attempt in 1 2 3 4 5 6 7 8 9 10 11 12; do \
	  $(RAY_ENV) $(BIN)/ray job submit --address http://127.0.0.1:$(DASH_PORT) --working-dir . \
	    --runtime-env-json '{"env_vars": {"NUGGET_GIT_COMMIT": "$(shell git rev-parse HEAD 2>/dev/null || echo unknown)", "NUGGET_ARTIFACT_ROOT": "$(NUGGET_ARTIFACT_ROOT)", "NUGGET_SOURCES_DIR": "$(NUGGET_SOURCES_DIR)"}}' \
	    -- python pipelines/full.py $(ARGS) 2>&1 | tee $$log; rc=$${PIPESTATUS[0]}; \
	  grep -q "No available agent" $$log || { rm -f $$log; exit $$rc; }; \
	  echo "job agent not ready yet; retrying in 5 s ($$attempt/12)"; sleep 5; \
	done; rm -f $$log; exit 1
	@echo "Results: $(NUGGET_ARTIFACT_ROOT)  (MLflow store: $(NUGGET_ARTIFACT_ROOT)/mlflow.db)"
	@echo "Browse:  make mlflow-ui   then open http://127.0.0.1:$(MLFLOW_PORT)"

# pyproject's addopts deselect the `cluster` marker; this target selects it
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# a private local Ray (stopped at the end), not the head of `make run`: a rehearsal leaves nothing running
PROFILE ?= paper
rehearse: $(STAMP) sources
	$(RAY_ENV) $(PY) -m tests.rehearsal.run --profile $(PROFILE) $(ARGS)

cluster-test: $(STAMP)
	$(PY) -m pytest -m cluster tests/cluster $(PYTEST_ARGS)

gpu-test:
	@$(NEED_CUDA)
	$(GPU_PYTHON) -m pytest -m gpu $(PYTEST_ARGS)

# benchmarks/gpu_check: every part a subprocess within its time limit; one failing never stops the rest
ifeq ($(DRY_RUN),1)
gpu-check: gpu-check-plan
else
gpu-check:
	@$(NEED_CUDA)
	$(GPU_PYTHON) -m benchmarks.gpu_check run --all --out $(GPU_CHECK_OUT)
endif

gpu-check-plan:
	$(PYTHON) -m benchmarks.gpu_check plan

gpu-check-pack: $(STAMP) sources
	$(PY) -m benchmarks.gpu_check pack --wheels $(GPU_WHEELS) --download --sources $(NUGGET_SOURCES_DIR)

mlflow-ui: $(STAMP)
	MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false $(BIN)/mlflow ui \
	  --backend-store-uri sqlite:///$(NUGGET_ARTIFACT_ROOT)/mlflow.db \
	  --host 127.0.0.1 --port $(MLFLOW_PORT) --workers 1

ray-stop:
	-$(RAY_ENV) $(BIN)/ray stop

lint: $(STAMP)
	$(BIN)/ruff check pipelines stages nugget_core tests
