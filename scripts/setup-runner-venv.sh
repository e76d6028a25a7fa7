#!/usr/bin/env bash
# Create or update the own virtualenv of one runner package:
#
#     scripts/setup-runner-venv.sh NAME      -> .venvs/runner-NAME
#
# For runner packages whose pyproject.toml says `[tool.duplexeval] environment = "own"`: their
# pins conflict with the shared .venv's (moshi 0.2.13 wants numpy<2.3, aiohttp<3.12, ...), so
# scripts/setup-venv.sh leaves them out and calls this for each at its end. The venv gets the CPU
# torch==2.13.0 when its requirements.txt names torch (constraints.txt keeps anything from replacing it), the package's requirements.txt
# alone (split by docker/reqs.py: the NODEPS_DEFAULT names, moshi among them, with --no-deps),
# then duplexeval-common, the runner core and the package, editable and --no-deps. Idempotent: a
# stamp records the hash of every input, so a second call with nothing changed returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-}
if [ -z "$name" ] || [ $# -ne 1 ]; then
  echo "usage: scripts/setup-runner-venv.sh NAME   (a folder of components/runners/)" >&2
  exit 2
fi
pkg=components/runners/$name
if [ ! -f "$pkg/pyproject.toml" ] || [ ! -f "$pkg/requirements.txt" ]; then
  echo "setup-runner-venv: no runner package $pkg (pyproject.toml and requirements.txt)" >&2
  exit 2
fi
if ! grep -q '^environment = "own"' "$pkg/pyproject.toml"; then
  echo "setup-runner-venv: $pkg shares .venv (no [tool.duplexeval] environment = \"own\"): use scripts/setup-venv.sh" >&2
  exit 2
fi
VENV=${RUNNER_VENV:-.venvs/runner-$name}
PY=${PYTHON:-python3}
# `python = "3.12"` under [tool.duplexeval]: the package needs that Python (nova-sonic: its SDK
# requires >= 3.12): python3.12 on PATH if it runs, else the newest pyenv 3.12.x
want=$(sed -n 's/^python = "\([0-9][0-9.]*\)"$/\1/p' "$pkg/pyproject.toml")
if [ -n "$want" ]; then
  PY=
  for c in "python$want" $(command -v pyenv >/dev/null && ls -d "$(pyenv root)"/versions/"$want".*/bin/python"$want" 2>/dev/null | sort -rV); do
    if "$c" -c "import sys; assert '%d.%d' % sys.version_info[:2] == '$want'" >/dev/null 2>&1; then PY=$c; break; fi
  done
  # no such Python: the rest of `make setup` goes on; this one model says so when it is asked for
  # (the local runtime's one-line error for a missing own environment)
  [ -n "$PY" ] || { echo "setup: skipped $VENV: $pkg needs Python $want (install python$want on PATH or a pyenv $want.x, then run make setup again)" >&2; exit 0; }
fi
stamp="$VENV/.duplexeval-setup-$(cat constraints.txt docker/reqs.py scripts/setup-runner-venv.sh \
  components/common/pyproject.toml components/duplex-runner/pyproject.toml \
  "$pkg/requirements.txt" "$pkg/pyproject.toml" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "setup: $VENV is up to date"
  exit 0
fi
mkdir -p "$(dirname "$VENV")"
# the runner venvs are build outputs: keep them out of git without touching .gitignore
[ "$(dirname "$VENV")" = .venvs ] && [ ! -f .venvs/.gitignore ] && echo '*' > .venvs/.gitignore
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
# pip and the build backend at constraints.txt's pins (as scripts/setup-venv.sh: pip 26 resolves in
# a third of the venv module's pip's time; setuptools builds the editable installs below)
"${pip[@]}" -c constraints.txt pip setuptools wheel
if grep -q '^torch==' "$pkg/requirements.txt"; then
  echo "setup: installing torch==2.13.0 (CPU) and $pkg/requirements.txt into $VENV"
  "${pip[@]}" -c constraints.txt torch==2.13.0
else
  echo "setup: installing $pkg/requirements.txt into $VENV (no torch)"
fi
split=$(mktemp -d)
trap 'rm -rf "$split"' EXIT
"$VENV/bin/python" docker/reqs.py split "$pkg/requirements.txt" "$split"
"${pip[@]}" -c constraints.txt -r "$split/deps.txt"
# --no-build-isolation: an sdist among them (fairseq-fixed, runners/dgslm) builds against this venv's
# torch and numpy (an isolated build environment would fetch another torch); its build tools are
# in the package's requirements.txt
if [ -s "$split/nodeps.txt" ]; then
  "${pip[@]}" --no-deps --no-build-isolation -r "$split/nodeps.txt"
fi
# the shared library, the runner core (the package's entry point needs it), then the package
# (PYTHONWARNINGS: setuptools' notes on editable installs and data folders, as in scripts/setup-venv.sh)
PYTHONWARNINGS=ignore::UserWarning "${pip[@]}" --no-deps --no-build-isolation -e components/common -e components/duplex-runner -e "$pkg"
"$VENV/bin/python" -c "import duplexeval_runner, duplexeval_runner_${name//-/_}"
rm -f "$VENV"/.duplexeval-setup-*
touch "$stamp"
echo "setup: done ($VENV)"
