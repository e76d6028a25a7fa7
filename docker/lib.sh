# Shared settings of the docker/ scripts. Sourced, not run.
# Every path can be overridden from the environment (see docs/containers.md).

DOCKER_SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$DOCKER_SCRIPTS_DIR/.." && pwd)"
BUILD_DIR="${DUPLEXEVAL_BUILD_DIR:-$REPO_ROOT/.build}"

# Our own dockerd: data under .build/docker, runtime files (socket, pidfile, exec root)
# under a short /run path, because unix socket paths are limited to 107 bytes.
_repo_tag="$(printf '%s' "$REPO_ROOT" | sha256sum | cut -c1-8)"
DOCKERD_DATA_ROOT="${DUPLEXEVAL_DOCKER_DATA:-$BUILD_DIR/docker}"
DOCKERD_RUN_DIR="${DUPLEXEVAL_DOCKER_RUN:-/run/duplexeval-docker-$_repo_tag}"
DOCKERD_SOCK="$DOCKERD_RUN_DIR/docker.sock"
DOCKERD_PIDFILE="$DOCKERD_RUN_DIR/dockerd.pid"
DOCKERD_LOG="$DOCKERD_DATA_ROOT/dockerd.log"
OUR_DOCKER_HOST="unix://$DOCKERD_SOCK"

WHEELHOUSE="${DUPLEXEVAL_WHEELHOUSE:-$BUILD_DIR/wheelhouse}"
CONTEXT_DIR="$BUILD_DIR/context"
CONSTRAINTS="$REPO_ROOT/constraints.txt"

# Image names. BASE_IMAGE: a Debian bookworm image with Python 3.11 and the venv module.
LOCAL_BASE_IMAGE="duplexeval/base:bookworm-py311"
BASE_IMAGE="${BASE_IMAGE:-$LOCAL_BASE_IMAGE}"
IMAGE_PREFIX="${DUPLEXEVAL_IMAGE_PREFIX:-duplexeval}"

# Packages installed with --no-deps (their declared deps cannot be built here).
# The default list lives in docker/reqs.py (NODEPS_DEFAULT), which does the split.
NODEPS_PACKAGES="${DUPLEXEVAL_NODEPS_PACKAGES:-$(python3 "$DOCKER_SCRIPTS_DIR/reqs.py" nodeps)}"

log() { printf '%s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Resolve DOCKER_HOST: an explicit one wins; else our dockerd when its socket exists;
# else the engine at the default socket when one answers.
resolve_docker_host() {
  if [ -n "${DOCKER_HOST:-}" ]; then return 0; fi
  if [ -S "$DOCKERD_SOCK" ]; then export DOCKER_HOST="$OUR_DOCKER_HOST"; return 0; fi
  if [ -S /var/run/docker.sock ] && docker version >/dev/null 2>&1; then return 0; fi
  export DOCKER_HOST="$OUR_DOCKER_HOST"
}

require_engine() {
  resolve_docker_host
  docker version >/dev/null 2>&1 \
    || die "no Docker engine at ${DOCKER_HOST:-unix:///var/run/docker.sock}: run \`make docker-up\`"
}

# The docker CLI that builds with BuildKit (needed for RUN --mount, which keeps the
# wheelhouse out of image layers). A CLI with the buildx plugin does it by itself;
# the classic 20.10 CLI from Debian's docker.io does it with DOCKER_BUILDKIT=1.
buildkit_cli() {
  if docker buildx version >/dev/null 2>&1; then echo docker; return 0; fi
  local c
  for c in /usr/bin/docker /bin/docker; do
    if [ -x "$c" ] && "$c" version --format '{{.Client.Version}}' 2>/dev/null | grep -q '^2[01]\.'; then
      echo "$c"; return 0
    fi
  done
  die "no BuildKit-capable docker CLI: install the buildx plugin, or Debian's docker.io (its /usr/bin/docker)"
}

# Image names (docker/images.py): a component components/<name>/ gives duplexeval/<name>; a runner
# package components/runners/<x>/ gives duplexeval/runner-<x>, whose entrypoint is the core's
# duplex-runner command. The orchestrator's docker runtime uses the same convention: the runner
# stage's component is runner-<x>, its image duplexeval/runner-<x>:<version of runners/<x>>.
RUNNER_PREFIX="runner-"

# The package folder of image NAME: components/runners/<x> for runner-<x>, else components/NAME.
component_dir() {
  case "$1" in
    "$RUNNER_PREFIX"*) printf '%s\n' "$REPO_ROOT/components/runners/${1#"$RUNNER_PREFIX"}" ;;
    *) printf '%s\n' "$REPO_ROOT/components/$1" ;;
  esac
}

# version = [project] version in $(component_dir NAME)/pyproject.toml (common, judge, runner-moshi, ...)
component_version() {
  python3 - "$(component_dir "$1")/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print(tomllib.load(f)["project"]["version"])
PY
}

# Every image name: the components that have a Dockerfile (common, orchestrator and the runner
# core have none), then runner-<x> for each runner package that has one.
image_components() {
  python3 "$DOCKER_SCRIPTS_DIR/images.py" list
}
