#!/usr/bin/env bash
# Time the container build from nothing, as CI would do it on a fresh machine:
# start a dockerd with an empty data root, make the base image, build the wheelhouse with
# no pip cache, build every image; then a warm rebuild (no change) and the image sizes.
# Everything goes to a separate build folder (default .build/cold) and its own dockerd. It
# refuses to start while another dockerd runs (`make docker-down` first): two daemons would
# share the docker0 bridge, and one started with --bridge=none deletes docker0 for the other.
#   docker/bench-cold.sh            results: <build dir>/bench.tsv and stderr
# Env: BENCH_DIR (default .build/cold), BENCH_KEEP=1 (keep its data afterwards)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
bench="${BENCH_DIR:-$BUILD_DIR/cold}"
export DUPLEXEVAL_BUILD_DIR="$bench"
export DUPLEXEVAL_DOCKER_DATA="$bench/docker"
export DUPLEXEVAL_DOCKER_RUN="/run/duplexeval-bench-$(printf '%s' "$bench" | sha256sum | cut -c1-8)"
export DUPLEXEVAL_WHEELHOUSE="$bench/wheelhouse"
unset DUPLEXEVAL_DOCKERD_ARGS
export DOCKER_HOST="unix://$DUPLEXEVAL_DOCKER_RUN/docker.sock"
export PIP_NO_CACHE_DIR=1
unset BASE_IMAGE

if pgrep -x dockerd >/dev/null; then die "another dockerd is running (pid $(pgrep -x dockerd | tr '\n' ' ')): stop it first (make docker-down)"; fi
rm -rf "$bench"; mkdir -p "$bench"
out="$bench/bench.tsv"; printf 'step\tseconds\n' >"$out"
step() { local name="$1"; shift; local t0; t0=$(date +%s.%N)
  "$@"
  printf '%s\t%.1f\n' "$name" "$(echo "$(date +%s.%N) - $t0" | bc)" | tee -a "$out" >&2; }
cleanup() { "$here/dockerd.sh" stop || true; [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$bench/docker" "$bench/wheelhouse" "$bench/context"; }
trap cleanup EXIT

log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
step dockerd-start "$here/dockerd.sh" start >/dev/null
step base-image "$here/base-image.sh"
step wheelhouse "$here/wheelhouse.sh"
step images-cold "$here/build-image.sh" --all
step images-warm "$here/build-image.sh" --all
# sizes of the versioned images (the <name>-install ones have the same layers as <name>)
for img in "$LOCAL_BASE_IMAGE" $(docker images --filter dangling=false --format '{{.Repository}}:{{.Tag}}' | grep -v -e ':latest$' -e '-install:' | sort); do
  printf 'size %s\t%s MB\n' "$img" "$(( $(docker image inspect -f '{{.Size}}' "$img") / 1000000 ))" | tee -a "$out" >&2
done
printf 'disk images (shared layers once)\t%s\n' "$(docker system df --format '{{.Type}} {{.Size}}' | awk '$1=="Images"{print $2}')" | tee -a "$out" >&2
printf 'disk data-root\t%s\n' "$(du -sh "$bench/docker" | cut -f1)" | tee -a "$out" >&2
printf 'disk wheelhouse\t%s\n' "$(du -sh "$bench/wheelhouse" | cut -f1)" | tee -a "$out" >&2
cp "$bench/logs/build-times.tsv" "$bench/build-times.tsv" 2>/dev/null || true
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
