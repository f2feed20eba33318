# nugget-pipeline: the two commands of the README are `make run` and `make test`.
# Both set up a fresh clone idempotently (venv from requirements/cpu.lock.txt) before working.
#   make install                               .venv from the CPU lock (uv, hashes checked), then the project
#   make lock [UPGRADE=1]                      re-resolve both locks from pyproject.toml (docs/environment.md)
#   make run  [ARGS="nugget.ratio=0.25 ..."]   local Ray head on 127.0.0.1 + ray job submit
#                                              (ARGS="--verbose": the libraries' bars and INFO lines too)
#   make test [PYTEST_ARGS="-k cache"]         the test suite (CPU, hermetic; TEST_WORKERS=N xdist workers,
#                                              default every core, 0 = one process)
#   make gpu-test [GPU_PYTHON=python]          the `gpu` tests, in an environment with CUDA torch
#   make gpu-check [GPU_PYTHON=python]         on your own CUDA machine (after gpu-check-pack), everything a GPU
#                                              is for: the headline burst, every rotating check, the Ray `gpu`
#                                              tests and a short profile=gpu1, into benchmarks/results/gpu/<UTC
#                                              date>/ (DRY_RUN=1: the lent window's plan)
#   make gpu-check-plan                        a lent GPU window's two back-to-back calls: command, carry (sizes),
#                                              timeout, parts, whose turn in the rotation; the limits checked
#   make gpu-check-pack [GPU_WHEELS=dir]       the folders those calls carry (.gpu-check/carry1..2): the burst's
#                                              data, the real SmolLM2 GGUF in two parts, the gguf wheel
#   make gpu-check-rehearse                    the window's two calls on this CPU at CPU sizes (CI runs it)
#   make cluster-test                          the `cluster` test: 3 Ray nodes, S3 (moto) and an MLflow
#                                              server on 127.0.0.1, a cut of the DAG (~10 min; not in make test)
#   make lint                                  ruff over the code, then the type checker (mypy) over
#                                              nugget_core and stages (docs/architecture.md)
#   make rehearse PROFILE=paper|gpu1 [ARGS=]   that GPU profile's whole DAG on CPU at rehearsal sizes,
#                                              on local fixtures; fails unless every stage ran, no
#                                              traceback, every report table measured (docs/rehearsal.md)
#   make docs                                  rewrite the generated stage table and DAG of
#                                              docs/architecture.md from the registry (nugget list --markdown --write)
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
# gpu-test runs in an environment that has CUDA torch and the project installed (docs/gpu.md
# "Install on a CUDA machine"), never in $(VENV): its CPU-pinned torch sees no GPU
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
# can submit jobs, i.e. run code as you, on the dashboard port (docs/running.md, "Local Ray and its dashboard port")
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

.PHONY: install lock run test rehearse cluster-test gpu-test gpu-check gpu-check-plan gpu-check-pack gpu-check-rehearse sources docs mlflow-ui ray-start ray-stop lint clean-artifacts

install: $(STAMP)

# The environment is locked (docs/environment.md): requirements/cpu.lock.txt for this venv,
# requirements/cuda.lock.txt for GPU machines, both written by `make lock` with uv
CPU_LOCK   := requirements/cpu.lock.txt
CUDA_LOCK  := requirements/cuda.lock.txt
UV         := $(BIN)/uv
# Where the +cpu torch wheel comes from (uv reads no pip.conf, so it is passed explicitly):
# a folder of wheels when this machine has one (CI's image: /opt/wheels), else PyTorch's
# CPU index page for torch. Any folder or page listing torch-<locked version>+cpu wheels works.
TORCH_CPU_WHEELS ?= $(if $(wildcard /opt/wheels/torch-*+cpu-*.whl),/opt/wheels,https://download.pytorch.org/whl/cpu/torch/)
# make lock UPGRADE=1: every package to the newest version pyproject.toml allows; without
# it uv keeps each version already in the lock that still fits (a new dependency only adds)
UPGRADE    ?=
LOCK_FLAGS  = --quiet --universal --python-version 3.11 --generate-hashes --extra dev --extra harness \
              -c requirements/constraints.txt $(if $(UPGRADE),--upgrade)

# uv itself, at the CPU lock's version and hashes (its entry cut out of the lock), installed
# by the venv's own pip: the one thing installed before uv can check the rest
$(UV): $(CPU_LOCK)
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 needed, found " + sys.version' \
	  || { echo "set PYTHON=python3.11 (or newer)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-deps --require-hashes -r <(sed -n '/^uv==/,/^ *#/p' $(CPU_LOCK))
	touch $(UV)

# the stamp follows the lock: a new lock re-installs. `uv pip sync` makes the venv exactly
# the lock (removes what it does not list) and checks every file against the lock's hashes
$(STAMP): pyproject.toml $(CPU_LOCK) $(UV)
	@echo "$(UV) pip sync --require-hashes $(CPU_LOCK) (torch from $(TORCH_CPU_WHEELS))"
	@$(UV) pip sync -q --python $(PY) --require-hashes --find-links $(TORCH_CPU_WHEELS) $(CPU_LOCK) \
	  || { echo "make install: $(CPU_LOCK) did not install with $$($(PY) -V) ($(PY)) and the torch"; \
	       echo "  wheels of $(TORCH_CPU_WHEELS): the lock has the hashes of the +cpu wheels found at lock"; \
	       echo "  time only (docs/environment.md, 'Another Python'): set TORCH_CPU_WHEELS to wheels for"; \
	       echo "  this Python, then make lock"; exit 1; }
	@# the project itself, its dependencies being the lock's; the build uses the locked setuptools
	$(UV) pip install -q --python $(PY) --no-deps --no-build-isolation -e .
	@# uv does not byte-compile; compileall uses every core. The bytecode matters: with
	@# PYTHONDONTWRITEBYTECODE set, an uncompiled venv recompiles torch in every process.
	@# Ignore modules this Python cannot compile (torch's py312_intrinsics.py), as pip does.
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null || true
	touch $(STAMP)

# both locks from pyproject.toml (+ requirements/*constraints.txt); review the diff before committing
lock: $(UV)
	$(UV) pip compile $(LOCK_FLAGS) --find-links $(TORCH_CPU_WHEELS) -c requirements/cpu.constraints.txt \
	  pyproject.toml -o $(CPU_LOCK)
	$(UV) pip compile $(LOCK_FLAGS) -c requirements/cuda.constraints.txt pyproject.toml -o $(CUDA_LOCK)
	@git diff --stat -- $(CPU_LOCK) $(CUDA_LOCK) 2>/dev/null || true

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

# `ray job submit`'s own chatter (packaging, "Next steps", the success banner printed after
# the job's last line): dropped, so the log ends with the driver's answer (report file, MLflow
# run page). Its errors and the job's output pass. Also the raylet's "N PYTHON worker
# processes have been started ... maximum expected startup concurrency" warning: the
# pipeline's Train workers and Tune trials (0 CPUs each) start that many by design, and Ray
# has no switch for it (docs/architecture.md, "No colour codes in a file"). ARGS=--verbose
# keeps everything.
RAY_CLI_CHATTER := ^[-0-9]+ [0-9:,]+[[:space:]]+(INFO|SUCC|WARNING) (cli|sdk|packaging|dashboard_sdk|working_dir)\.py:[0-9]+ --|^\(raylet\) WARNING: [0-9]+ PYTHON worker processes have been started
RUN_FILTER  = $(if $(findstring --verbose,$(ARGS)),cat,grep --line-buffered -vE '$(RAY_CLI_CHATTER)')
# colour codes only on a terminal and without NO_COLOR (no-color.org): `ray job submit`'s
# pipe into tee hides the terminal from it, so the recipe asks about its own stdout
RAY_LOG_COLOR = color=false; [ -t 1 ] && [ -z "$$NO_COLOR" ] && color=true

# a just-started head can refuse jobs for a few seconds ("No available agent"): retry
run: $(STAMP) sources ray-start
	@echo "results under $(NUGGET_ARTIFACT_ROOT); the log ends with the report's file and the MLflow run's page"
	@log=$$(mktemp); $(RAY_LOG_COLOR); for attempt in 1 2 3 4 5 6 7 8 9 10 11 12; do \
	  $(RAY_ENV) $(BIN)/ray job submit --address http://127.0.0.1:$(DASH_PORT) --working-dir . \
	    --log-style record --log-color $$color \
	    --runtime-env-json '{"env_vars": {"NUGGET_GIT_COMMIT": "$(shell git rev-parse HEAD 2>/dev/null || echo unknown)", "NUGGET_ARTIFACT_ROOT": "$(NUGGET_ARTIFACT_ROOT)", "NUGGET_SOURCES_DIR": "$(NUGGET_SOURCES_DIR)"}}' \
	    -- python pipelines/full.py $(ARGS) 2>&1 | tee $$log | $(RUN_FILTER); \
	  rc=$${PIPESTATUS[0]}; \
	  grep -q "No available agent" $$log || { rm -f $$log; exit $$rc; }; \
	  echo "job agent not ready yet; retrying in 5 s ($$attempt/12)"; sleep 5; \
	done; rm -f $$log; exit 1

# pyproject's addopts deselect the `cluster` marker; this target selects it. The suite runs on
# TEST_WORKERS pytest-xdist workers (default: every core; 0 = one process), each file's tests on
# one worker (tests/conftest.py's xdist groups: module fixtures run once)
TEST_WORKERS ?= $(shell nproc)
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

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

gpu-check-rehearse: $(STAMP) sources
	$(PY) -m benchmarks.gpu_check rehearse

# ?workflowType=machine_learning: MLflow 3's UI opens its GenAI view in a fresh browser
# otherwise (the link the run's log ends with carries it too)
mlflow-ui: $(STAMP)
	@echo "runs: http://127.0.0.1:$(MLFLOW_PORT)/#/experiments?workflowType=machine_learning"
	MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false $(BIN)/mlflow ui \
	  --backend-store-uri sqlite:///$(NUGGET_ARTIFACT_ROOT)/mlflow.db \
	  --host 127.0.0.1 --port $(MLFLOW_PORT) --workers 1

ray-stop:
	-$(RAY_ENV) $(BIN)/ray stop

docs: $(STAMP)
	$(PY) -m pipelines.nugget list --markdown --write

# ruff, then mypy over the files [tool.mypy] in pyproject.toml names (nugget_core, stages);
# its cache is .mypy_cache/ (docs/architecture.md, "Lint and types")
lint: $(STAMP)
	$(BIN)/ruff check pipelines stages nugget_core tests
	$(PY) -m mypy
