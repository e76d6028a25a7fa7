#!/usr/bin/env bash
# Create or update the local-runtime virtualenv (.venv) from the pinned
# requirements of every component. Idempotent: a stamp records the hash of
# all requirement files, so a second call with nothing changed returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}
reqs=(constraints.txt components/*/requirements.txt components/*/requirements-nodeps.txt components/*/pyproject.toml)
stamp="$VENV/.duplexeval-setup-$(cat "${reqs[@]}" 2>/dev/null | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "setup: $VENV is up to date"
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
echo "setup: installing torch==2.13.0 (CPU) and the components' pinned requirements into $VENV"
"${pip[@]}" torch==2.13.0
req_args=()
for r in components/*/requirements.txt; do req_args+=(-r "$r"); done
"${pip[@]}" -c constraints.txt "${req_args[@]}" pytest==9.2.0
for r in components/*/requirements-nodeps.txt; do
  [ -f "$r" ] && "${pip[@]}" --no-deps -r "$r"
done
# The shared library first, then every component, editable: the local runtime runs the source.
"${pip[@]}" --no-deps -e components/common
for c in components/*/; do
  [ "$c" = components/common/ ] && continue
  [ -f "$c/pyproject.toml" ] && "${pip[@]}" --no-deps -e "$c"
done
rm -f "$VENV"/.duplexeval-setup-*
touch "$stamp"
echo "setup: done"
