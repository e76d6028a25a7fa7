#!/usr/bin/env bash
# `make test`'s passes (the Makefile's comment above `test` says why there are three):
#   1. everything not marked serial or filler, in TEST_WORKERS pytest-xdist processes;
#   2. the `serial` tests in SERIAL_WORKERS processes, and beside them
#   3. the `filler` tests in one process at the idle scheduling class, temporary folders in memory.
# Exit 0 when every pass passed or had nothing to run (pytest's exit 5), else 1 naming the exits.
# From the Makefile: PYTEST_RUN (the pytest command), TEST_WORKERS, SERIAL_WORKERS in the
# environment; the arguments (make's PYTEST_ARGS) go to every pass.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${PYTEST_RUN:?run through make test}" "${TEST_WORKERS:=4}" "${SERIAL_WORKERS:=2}"
xdist="--dist loadfile --no-loadscope-reorder"  # whole files, in the root conftest.py's order

a=0; b=0; c=0
# shellcheck disable=SC2086
$PYTEST_RUN -n "$TEST_WORKERS" $xdist -m "not serial and not filler" "$@" tests benchmarks || a=$?

# the filler process: SCHED_IDLE (nice 19 without chrt), its basetemp in /dev/shm when that has 4 GB free
idle=(nice -n 19)
if command -v chrt >/dev/null && chrt --idle 0 true 2>/dev/null; then idle=(chrt --idle 0); fi
mkdir -p .build
log=.build/test-filler.log
basetemp=() tmpdir=${TMPDIR:-/tmp}
shm_free_gb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print int($4 / 1048576)}')
if [ -n "$shm_free_gb" ] && [ "$shm_free_gb" -ge 4 ] && [ -w /dev/shm ]; then
  shm=$(mktemp -d /dev/shm/duplexeval-filler.XXXXXX)
  basetemp=(--basetemp "$shm/t") tmpdir=$shm/tmp  # pytest's folders and every other temporary file
  mkdir -p "$tmpdir"
fi
# shellcheck disable=SC2086
TMPDIR=$tmpdir "${idle[@]}" $PYTEST_RUN "${basetemp[@]}" -m "filler and not serial" "$@" tests benchmarks >"$log" 2>&1 &
filler=$!

# shellcheck disable=SC2086
$PYTEST_RUN -n "$SERIAL_WORKERS" $xdist -m serial "$@" tests benchmarks || b=$?
wait "$filler" || c=$?
echo "== the filler tests (run beside the serial pass, at the idle scheduling class; also in $log) =="
cat "$log"
# the filler's folders in memory: removed when it passed, else kept, as pytest keeps a failure's
if [ -n "${shm:-}" ]; then
  case $c in 0|5) rm -rf "$shm" ;; *) echo "make test: the filler tests' folders are kept in $shm" >&2 ;; esac
fi
for rc in $a $b $c; do
  case $rc in 0|5) ;; *) echo "make test: a pass failed (exits: parallel $a, serial $b, filler $c)" >&2; exit 1;; esac
done
