#!/usr/bin/env bash
# Make the local base image duplexeval/base:bookworm-py311 from Debian packages, for
# machines that reach no container registry: debootstrap (minbase) of bookworm with
# python3 (3.11) and python3-venv, imported with `docker import`. It stands in for
# python:3.11-slim-bookworm (same Debian release, same Python minor version).
#   docker/base-image.sh [--force]
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), BASE_SUITE (default bookworm)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_engine

force=0; [ "${1:-}" = "--force" ] && force=1
# The Debian packages in the image; recorded as a label, so an image made with another list is remade.
packages="python3,python3-venv,espeak-ng,flite"
have="$(docker image inspect -f '{{ index .Config.Labels "duplexeval.base.packages" }}' "$LOCAL_BASE_IMAGE" 2>/dev/null || true)"
if [ $force = 0 ] && [ "$have" = "$packages" ]; then
  log "$LOCAL_BASE_IMAGE exists (use --force to remake it)"; exit 0
fi
[ "$(id -u)" = 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null || die "debootstrap not installed: apt-get install -y debootstrap"

suite="${BASE_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
rootfs="$BUILD_DIR/rootfs-$suite"
t0=$SECONDS
rm -rf "$rootfs"; mkdir -p "$BUILD_DIR"
log "debootstrap --variant=minbase $suite (python3, python3-venv, espeak-ng, flite: the tts-synth engines) ..."
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >"$BUILD_DIR/debootstrap.log" 2>&1 \
  || { tail -n 20 "$BUILD_DIR/debootstrap.log" >&2; die "debootstrap failed; log: $BUILD_DIR/debootstrap.log"; }
# Slim it: package caches, lists, docs and man pages are not needed at run time.
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
       "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
       "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/tmp/* 2>/dev/null || true
t1=$SECONDS
tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  --change "LABEL duplexeval.base.packages=$packages" \
  --message "debootstrap --variant=minbase --include=$packages $suite" \
  - "$LOCAL_BASE_IMAGE" >/dev/null
rm -rf "$rootfs"
py="$(docker run --rm --network none "$LOCAL_BASE_IMAGE" python3 --version)"
size="$(docker image inspect -f '{{.Size}}' "$LOCAL_BASE_IMAGE")"
log "$LOCAL_BASE_IMAGE: $py, $((size / 1000000)) MB; debootstrap $((t1 - t0)) s, import $((SECONDS - t1)) s"
