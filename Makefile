# duplexeval: `make eval` and `make test` are all a user needs; both run `make setup` first.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(VENV)/bin
# a benchmark of `duplexeval benchmarks` (benchmarks/<name>/); empty: the dataset's, else the default one
BENCHMARK ?=
MODEL ?= cascade
# empty: the benchmark's default dataset
DATASET ?=
RUNTIME ?= local
ASR ?= faster-whisper
# empty: the benchmark's default judge
JUDGE ?=
LIMIT ?=
# only these subsets of the dataset (space-separated; default: all)
SUBSETS ?=
PYTEST_ARGS ?=
# per-stage limits (empty: the defaults, 6 h, 3/4 of the memory, every core)
STAGE_TIMEOUT ?=
MEMORY_GB ?=
CPUS ?=
# the model's endpoint or weights, read from the environment by the catalog (docs/runners.md):
#   MODEL_URL (server or API endpoint), MODEL_INSECURE=1 / MODEL_CA=<pem> (TLS of a self-signed server),
#   MODEL_DIR (local weights, e.g. a kyutai/moshiko-pytorch-bf16 snapshot), REPLAY_TREE (MODEL=replay);
#   keys (OPENAI_API_KEY, GEMINI_API_KEY) only from the environment. Runner settings: RUNNER_ARGS="k=v k=v",
#   split as a shell would (e.g. RUNNER_ARGS='concurrency=4 system_prompt="You are brief."').
RUNNER_ARGS ?=
# the judge's model and OpenAI-compatible endpoint (key: $$OPENAI_API_KEY in the environment)
JUDGE_MODEL ?=
JUDGE_BASE_URL ?=
# the benchmark's own settings, "name=value ..." (`duplexeval benchmarks` lists them); OFFICIAL_REVISION=X
# is short for BENCHMARK_ARGS="official_revision=X" (Full-Duplex-Bench v1.0's official column)
BENCHMARK_ARGS ?=
OFFICIAL_REVISION ?=
# make score: the task of a subset folder named otherwise than the benchmark's official names
# ("subset=task ..."), and the scorer's settings ("name=value ..."; ICC_GT=, EXCLUDE_INVALID=1 and
# STRICT=1 are short for icc_gt=..., exclude_invalid=true and strict=true)
TASKS ?=
SCORE_ARGS ?=
# where stages run: empty/local (this machine) or slurm (job arrays; docs/scale.md)
EXECUTOR ?=
SLURM_SHARDS ?=
SLURM_PARTITION ?=
SLURM_TIME ?=
SLURM_GPUS_RUNNER ?=
SLURM_RETRIES ?=
SLURM_SBATCH_ARGS ?=

# One image variable per component for the docker runtime: swapping one re-runs that stage and those after it.
IMAGE_VARS := TTS_IMAGE=tts-synth RUNNER_IMAGE=duplex-runner ASR_IMAGE=asr-aligner JUDGE_IMAGE=judge AGGREGATOR_IMAGE=aggregator
IMAGE_ARGS = $(foreach p,$(IMAGE_VARS),$(if $($(word 1,$(subst =, ,$(p)))),--image $(word 2,$(subst =, ,$(p)))=$($(word 1,$(subst =, ,$(p))))))

.PHONY: setup eval eval-images bytecode test test-fast test-serial score runs show report archive verify rescore compare leaderboard clean-store
setup:
	@scripts/setup-venv.sh

eval: setup $(if $(filter docker,$(RUNTIME)),eval-images)
	$(BIN)/duplexeval eval $(if $(BENCHMARK),--benchmark $(BENCHMARK)) --model $(MODEL) \
	  $(if $(DATASET),--dataset $(DATASET)) --runtime $(RUNTIME) --asr $(ASR) \
	  $(if $(JUDGE),--judge $(JUDGE)) $(if $(LIMIT),--limit $(LIMIT)) $(foreach s,$(SUBSETS),--subset $(s)) $(IMAGE_ARGS) $(if $(RUNNER_ARGS),--runner-args "$$RUNNER_ARGS") \
	  $(if $(STAGE_TIMEOUT),--stage-timeout $(STAGE_TIMEOUT)) $(if $(MEMORY_GB),--memory-gb $(MEMORY_GB)) \
	  $(if $(CPUS),--cpus $(CPUS)) $(if $(JUDGE_MODEL),--judge-arg "model=$(JUDGE_MODEL)") \
	  $(if $(JUDGE_BASE_URL),--judge-arg "base_url=$(JUDGE_BASE_URL)") \
	  $(foreach a,$(BENCHMARK_ARGS),--benchmark-arg $(a)) \
	  $(if $(OFFICIAL_REVISION),--benchmark-arg "official_revision=$(OFFICIAL_REVISION)") \
	  $(if $(EXECUTOR),--executor $(EXECUTOR)) $(if $(SLURM_SHARDS),--slurm-shards $(SLURM_SHARDS)) \
	  $(if $(SLURM_PARTITION),--slurm-partition $(SLURM_PARTITION)) $(if $(SLURM_TIME),--slurm-time $(SLURM_TIME)) \
	  $(if $(SLURM_GPUS_RUNNER),--slurm-gpus-runner $(SLURM_GPUS_RUNNER)) \
	  $(if $(SLURM_RETRIES),--slurm-retries $(SLURM_RETRIES)) $(foreach a,$(SLURM_SBATCH_ARGS),--slurm-sbatch-arg=$(a))

# the images `make eval RUNTIME=docker` needs: the benchmark's components and the runner image of MODEL
eval-images: setup
	@comps=$$($(BIN)/python -m duplexeval.images "$(BENCHMARK)" "$(DATASET)" "$(MODEL)") \
	  && $(DOCKER_SCRIPTS_DIR)/wheelhouse.sh common $$comps \
	  && $(DOCKER_SCRIPTS_DIR)/build-image.sh $$comps

# a passed test's tmp_path is removed when it ends, and only the last session's failures are kept:
# one full run writes about 4 GB of audio and stores, which would otherwise pile up run after run.
# Two passes: everything but the timing-sensitive tests in TEST_WORKERS processes (pytest-xdist; a
# test file stays in one process, so its module fixtures are built once), then the tests marked
# `serial` (real-time pacing, time ratios) without the parallel rest's load: two processes, one
# file each (a real-time session uses little CPU; two side by side stay well inside their drift
# and timing limits, docs/performance.md "CI"; with four, a start-up time ratio failed once).
# Beside the serial pass, the tests marked `filler` (whole files of CPU-bound synthesis, listed in
# the root conftest.py) run in one more process on the CPU the real-time sessions leave idle: at
# the idle scheduling class (SCHED_IDLE; nice 19 where chrt is missing), so they take only what no
# serial test wants. Their output comes after the serial pass's. Every pass's temporary folders
# are in memory where /dev/shm has 8 GB free (TEST_TMPFS=0: in TMPDIR, as before): away from the
# image build's disk, and no write-back of theirs delays a real-time frame (the disk, not the
# CPU, is what did: docs/performance.md "CI"). scripts/test-passes.sh runs the passes.
TEST_WORKERS ?= 4
SERIAL_WORKERS ?= 2
TEST_TMPFS ?= auto
PYTEST_RUN = $(BIN)/python -m pytest -q -p no:cacheprovider -o tmp_path_retention_policy=failed \
  -o tmp_path_retention_count=1 --durations=25
# --no-loadscope-reorder: files are handed out in the order the root conftest.py sorts them (the
# longest first), not xdist's default of the files with the most tests first.
test: bytecode
	@PYTEST_RUN='$(PYTEST_RUN)' TEST_WORKERS='$(TEST_WORKERS)' SERIAL_WORKERS='$(SERIAL_WORKERS)' \
	  TEST_TMPFS='$(TEST_TMPFS)' scripts/test-passes.sh $(PYTEST_ARGS)

# Bytecode written once before the tests. Where PYTHONDONTWRITEBYTECODE=1 is set (as on the CI
# machine) no import writes any, so every process of the suite compiled each project module it
# imported (the editable sources have no __pycache__; about 2 s of CPU in a small eval's processes)
# and every test process rewrote the ~200 test modules' asserts (pytest keeps its rewritten
# modules only where bytecode may be written: collecting took 22 s of CPU per process, 8 s after
# this). Both read what is written here; a stale file is recompiled in memory as usual
# (docs/performance.md, "CI"). Where the variable is not set, imports write them and this does nothing.
bytecode: setup
	@if [ -n "$$PYTHONDONTWRITEBYTECODE" ]; then \
	  $(BIN)/python -m compileall -q -j 0 components benchmarks >/dev/null || true; \
	  env -u PYTHONDONTWRITEBYTECODE $(PYTEST_RUN) --collect-only tests benchmarks >/dev/null 2>&1 || true; \
	fi

# the inner loop: every test but the slow ones (a whole pipeline run, docker, Slurm, a browser:
# marked `slow` by the root conftest.py) and the timing-sensitive `serial` ones, in parallel; a few
# minutes. CI runs the full `make test`.
test-fast: bytecode
	@env -u DUPLEXEVAL_DOCKER_TESTS -u DUPLEXEVAL_REQUIRE_BROWSER $(PYTEST_RUN) -n $(TEST_WORKERS) --dist loadfile \
	  --no-loadscope-reorder -m "not slow and not serial" $(PYTEST_ARGS) tests benchmarks; \
	rc=$$?; case $$rc in 0|5) ;; *) exit $$rc;; esac

# the same, one process, in collection order (a failure that only shows in parallel, or a debugger)
test-serial: bytecode
	$(PYTEST_RUN) $(PYTEST_ARGS) tests benchmarks

# scores a tree made elsewhere in the benchmark's layout (its doc page; default: the default benchmark)
score: setup
	@test -n "$(TREE)" || { echo "error: make score needs TREE=<folder in the benchmark's layout> (and OUT=<folder>)" >&2; exit 2; }
	@test -n "$(OUT)" || { echo "error: make score needs OUT=<folder for the scores> (and TREE=<folder>)" >&2; exit 2; }
	$(BIN)/aggregator score $(if $(BENCHMARK),--benchmark $(BENCHMARK)) --tree "$(TREE)" --out "$(OUT)" \
	  $(foreach t,$(TASKS),--task $(t)) $(foreach a,$(SCORE_ARGS),--option $(a)) \
	  $(if $(ICC_GT),--option "icc_gt=$(ICC_GT)") $(if $(filter 1,$(EXCLUDE_INVALID)),--option exclude_invalid=true) \
	  $(if $(OFFICIAL_REVISION),--option "official_revision=$(OFFICIAL_REVISION)") \
	  $(if $(filter 1,$(STRICT)),--option strict=true)

runs: setup
	@$(BIN)/duplexeval runs

show: setup
	@$(BIN)/duplexeval show $(or $(RUN),latest)

# Reports and archives (docs/reports.md, docs/archives.md). RUN defaults to the latest run.
report: setup
	@$(BIN)/duplexeval report $(or $(RUN),latest)

archive: setup
	@test -n "$(FILE)" || { echo "error: make archive needs FILE=<run.tar.zst or run.tar.gz> (RUN=<id>, default latest)" >&2; exit 2; }
	@$(BIN)/duplexeval archive $(or $(RUN),latest) -o "$(FILE)"

verify: setup
	@test -n "$(FILE)" || { echo "error: make verify needs FILE=<archive>" >&2; exit 2; }
	@$(BIN)/duplexeval verify "$(FILE)"

rescore: setup
	@test -n "$(FILE)" || { echo "error: make rescore needs FILE=<archive> (RUNTIME=docker, AGGREGATOR_IMAGE=...)" >&2; exit 2; }
	@$(BIN)/duplexeval rescore "$(FILE)" --runtime $(RUNTIME) $(if $(AGGREGATOR_IMAGE),--aggregator-image "$(AGGREGATOR_IMAGE)") $(if $(OUT),-o "$(OUT)")

compare: setup
	@test -n "$(A)" -a -n "$(B)" || { echo "error: make compare needs A=<run or archive> B=<run or archive>" >&2; exit 2; }
	@$(BIN)/duplexeval compare "$(A)" "$(B)"

leaderboard: setup
	@test -n "$(FILES)" || { echo "error: make leaderboard needs FILES=\"<archive> <archive> ...\"" >&2; exit 2; }
	@$(BIN)/duplexeval leaderboard $(FILES) $(if $(OUT),-o "$(OUT)")

clean-store:
	rm -rf store runs

-include make/docker.mk
