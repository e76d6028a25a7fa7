#!/usr/bin/env bash
# Drop dangling images and the BuildKit cache beyond a size (least recently used first).
#   docker/prune.sh [KEEP]      KEEP: build cache to keep, default 6GB (the images need ~4 GB)
# The tagged duplexeval images stay; a build after a full prune (KEEP=0) starts cold.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_engine
keep="${1:-6GB}"
docker image prune -f >&2
docker builder prune -f --keep-storage "$keep" >&2
docker system df >&2
