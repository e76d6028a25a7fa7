#!/usr/bin/env bash
# `make test`'s passes (the Makefile's comment above `test` says why there are three):
#   1. everything not marked serial or filler, in TEST_WORKERS pytest-xdist processes;
#   2. the `serial` tests in SERIAL_WORKERS processes, and beside them
#   3. the `filler` tests in one process at the idle scheduling class.
# Each pass's temporary folders (pytest's basetemp, TMPDIR) are in memory, under one folder of
# /dev/shm, where /dev/shm has 8 GB free and TEST_TMPFS is not 0: the suite writes gigabytes of
# audio and stores, which on disk compete with the image build beside the first pass and whose
# write-back delays the serial pass's real-time frames (docs/performance.md, "CI"). The folder is
# removed when every pass passed; otherwise it is kept, with the failed tests' folders, and named.
# Exit 0 when every pass passed or had nothing to run (pytest's exit 5), else 1 naming the exits;
# 130 when interrupted (tests/test_make_test_passes.py).
# From the Makefile: PYTEST_RUN (the pytest command), TEST_WORKERS, SERIAL_WORKERS and TEST_TMPFS
# in the environment; the arguments (make's PYTEST_ARGS) go to every pass.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${PYTEST_RUN:?run through make test}" "${TEST_WORKERS:=4}" "${SERIAL_WORKERS:=2}" "${TEST_TMPFS:=auto}"
xdist="--dist loadfile --no-loadscope-reorder"  # whole files, in the root conftest.py's order

shm=""
shm_free_gb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print int($4 / 1048576)}')
if [ "$TEST_TMPFS" != 0 ] && [ -n "$shm_free_gb" ] && [ "$shm_free_gb" -ge 8 ] && [ -w /dev/shm ]; then
  shm=$(mktemp -d /dev/shm/duplexeval-tests.XXXXXX)
  echo "make test: temporary folders in memory, in $shm"
fi
# a pass's folders: pytest's --basetemp and a TMPDIR for every other temporary file
pass_env() {  # NAME -> sets basetemp (array) and tmpdir
  basetemp=() tmpdir=${TMPDIR:-/tmp}
  if [ -n "$shm" ]; then
    basetemp=(--basetemp "$shm/$1") tmpdir=$shm/$1-tmp
    mkdir -p "$tmpdir"
  fi
}

# Interrupted (Ctrl-C reaches the script with its pytest; a TERM sent to the script is seen when the
# running pass ends): no further pass, the filler stopped, the folder in memory removed, exit 130.
interrupted=0 filler=""
trap 'interrupted=1' INT TERM
stop_if_interrupted() {
  [ "$interrupted" = 1 ] || return 0
  if [ -n "$filler" ]; then kill "$filler" 2>/dev/null; wait "$filler" 2>/dev/null; fi
  [ -z "$shm" ] || rm -rf "$shm"
  echo "make test: interrupted${shm:+ (removed $shm)}" >&2
  exit 130
}

a=0; b=0; c=0
pass_env first
# shellcheck disable=SC2086
TMPDIR=$tmpdir $PYTEST_RUN "${basetemp[@]}" -n "$TEST_WORKERS" $xdist -m "not serial and not filler" "$@" \
  tests benchmarks || a=$?
stop_if_interrupted

# the filler process: SCHED_IDLE (nice 19 without chrt), its output after the serial pass's
idle=(nice -n 19)
if command -v chrt >/dev/null && chrt --idle 0 true 2>/dev/null; then idle=(chrt --idle 0); fi
mkdir -p .build
log=.build/test-filler.log
pass_env filler
# shellcheck disable=SC2086
TMPDIR=$tmpdir "${idle[@]}" $PYTEST_RUN "${basetemp[@]}" -m "filler and not serial" "$@" tests benchmarks \
  >"$log" 2>&1 &
filler=$!

pass_env serial
# shellcheck disable=SC2086
TMPDIR=$tmpdir $PYTEST_RUN "${basetemp[@]}" -n "$SERIAL_WORKERS" $xdist -m serial "$@" tests benchmarks || b=$?
stop_if_interrupted
wait "$filler" || c=$?
stop_if_interrupted
echo "== the filler tests (run beside the serial pass, at the idle scheduling class; also in $log) =="
cat "$log"
failed=0
for rc in $a $b $c; do case $rc in 0|5) ;; *) failed=1 ;; esac; done
if [ -n "$shm" ]; then
  if [ "$failed" = 0 ]; then rm -rf "$shm"; else echo "make test: the failed tests' folders are kept in $shm" >&2; fi
fi
if [ "$failed" = 1 ]; then
  echo "make test: a pass failed (exits: parallel $a, serial $b, filler $c)" >&2; exit 1
fi
