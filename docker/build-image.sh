#!/usr/bin/env bash
# Build the duplexeval images offline (docker build --network none, BuildKit).
#   docker/build-image.sh bases          duplexeval/python-base, common-base, torch-base
#   docker/build-image.sh NAME [NAME..]  the bases, then duplexeval/NAME:<version> (+ :latest)
#   docker/build-image.sh --all          every image: each component that has a Dockerfile, and
#                                        runner-<x> for each runner package components/runners/<x>
#                                        that has one (docker/images.py list)
# An image is built in two steps: the install steps shared by every image of its kind, on
# duplexeval/torch-base when its requirements need torch, else on duplexeval/common-base, give
# the intermediate image duplexeval/NAME-install:<version>; the image's own Dockerfile then adds
# its title label and entrypoint on top (build argument INSTALLED), giving duplexeval/NAME:<version>.
#   component NAME:   docker/Dockerfile.component, then components/NAME/Dockerfile
#   runner-<x>:       docker/Dockerfile.runner (common, the runner core components/duplex-runner,
#                     runners/<x> and the duplexeval runner packages it depends on), then
#                     components/runners/<x>/Dockerfile; the version is runners/<x>'s
# Every image is checked with `docker run --rm --network none IMAGE --help`; a runner image also
# with `IMAGE list`, where each runner must be listed with no missing module.
# Env: BASE_IMAGE (default duplexeval/base:bookworm-py311; python:3.11-slim-bookworm where a
# registry is reachable), NO_CACHE=1 (rebuild every layer), PYTHON (for the staging's pip).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_engine

[ $# -gt 0 ] || die "usage: $0 bases | NAME... | --all"
if [ "$1" = "--all" ]; then
  mapfile -t names < <(image_components)
  [ ${#names[@]} -gt 0 ] || die "no image has a Dockerfile"
  python3 "$DOCKER_SCRIPTS_DIR/images.py" skipped | sed 's/^/skipped: /' >&2
elif [ "$1" = "bases" ]; then
  names=()
else
  names=("$@")
fi
declare -A parent  # the base each image is installed on: torch-base exactly when it needs torch
for n in "${names[@]}"; do
  [ "$n" = duplex-runner ] && die "duplex-runner (the runner core) has no image of its own: build runner-<name> (one per runner package: $(image_components | grep "^$RUNNER_PREFIX" | paste -sd ' '))"
  [ -f "$(component_dir "$n")/Dockerfile" ] || die "no $(component_dir "$n" | sed "s#^$REPO_ROOT/##")/Dockerfile"
  python3 "$DOCKER_SCRIPTS_DIR/images.py" buildable "$n" || exit 1
  rc=0; python3 "$DOCKER_SCRIPTS_DIR/images.py" needs-torch "$n" || rc=$?
  case $rc in
    0) parent[$n]=torch-base ;;
    1) parent[$n]=common-base ;;
    *) die "$n: cannot tell its requirements (docker/images.py)" ;;
  esac
done

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x "$REPO_ROOT/.venv/bin/python" ]; then PYTHON="$REPO_ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
cli="$(buildkit_cli)"
logdir="$BUILD_DIR/logs"; mkdir -p "$logdir"
times="$logdir/build-times.tsv"
[ -f "$times" ] || printf 'when\timage\tseconds\tbytes\tid\tbase_image\tcache\n' >"$times"

# The base image must exist locally (no registry is assumed): another one is pulled, and when
# that fails the local one is used instead.
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  if [ "$BASE_IMAGE" != "$LOCAL_BASE_IMAGE" ]; then
    log "base image $BASE_IMAGE not present locally; trying to pull it ..."
    if ! docker pull "$BASE_IMAGE" >&2; then
      log "cannot get $BASE_IMAGE: falling back to the local base $LOCAL_BASE_IMAGE"
      BASE_IMAGE="$LOCAL_BASE_IMAGE"
    fi
  fi
fi
# The local base is (re)made when missing or made with another package list (base-image.sh checks
# its label and returns at once when it is current).
if [ "$BASE_IMAGE" = "$LOCAL_BASE_IMAGE" ]; then
  "$DOCKER_SCRIPTS_DIR/base-image.sh"
fi

t_stage=$SECONDS
python3 "$DOCKER_SCRIPTS_DIR/stage_context.py" --wheelhouse "$WHEELHOUSE" --context "$CONTEXT_DIR" \
  --python "$PYTHON" "${names[@]}"
log "context staged in $((SECONDS - t_stage)) s ($CONTEXT_DIR)"

common_version="$(component_version common)"
cache_flag=(); [ "${NO_CACHE:-0}" = 1 ] && cache_flag=(--no-cache)

build() {  # build TAG LOGNAME CONTEXT docker-build-args...
  local tag="$1" name="$2" ctx="$3"; shift 3
  local t0=$SECONDS logf="$logdir/build-$name.log"
  log "building $tag ..."
  if ! DOCKER_BUILDKIT=1 "$cli" build --network none --progress plain "${cache_flag[@]}" \
        --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$tag" "$@" "$ctx" >"$logf" 2>&1; then
    tail -n 30 "$logf" >&2; die "build of $tag failed; log: $logf"
  fi
  local dt=$((SECONDS - t0)) size id
  size="$(docker image inspect -f '{{.Size}}' "$tag")"; id="$(docker image inspect -f '{{.Id}}' "$tag")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$tag" "$dt" "$size" "$id" "$BASE_IMAGE" \
    "$([ "${NO_CACHE:-0}" = 1 ] && echo none || echo warm-or-cold)" >>"$times"
  log "built $tag in $dt s, $((size / 1000000)) MB"
}

for target in python-base common-base torch-base; do
  build "$IMAGE_PREFIX/$target:$common_version" "$target" "$CONTEXT_DIR/_$target" -f "$DOCKER_SCRIPTS_DIR/Dockerfile.base" --target "$target"
  docker tag "$IMAGE_PREFIX/$target:$common_version" "$IMAGE_PREFIX/$target:latest"
done

for n in "${names[@]}"; do
  v="$(component_version "$n")"
  installed="$IMAGE_PREFIX/$n-install:$v" tag="$IMAGE_PREFIX/$n:$v"
  case "$n" in
    "$RUNNER_PREFIX"*) install_args=(-f "$DOCKER_SCRIPTS_DIR/Dockerfile.runner") ;;
    *) install_args=(-f "$DOCKER_SCRIPTS_DIR/Dockerfile.component" --build-arg COMPONENT="$n") ;;
  esac
  build "$installed" "$n-install" "$CONTEXT_DIR/$n" "${install_args[@]}" \
    --build-arg PARENT="$IMAGE_PREFIX/${parent[$n]}:$common_version" --build-arg VERSION="$v"
  docker tag "$installed" "$IMAGE_PREFIX/$n-install:latest"
  labels=()
  case "$n" in
    "$RUNNER_PREFIX"*) base_of_own="$installed" ;;
    *)  # the benchmark packages on top; the labels say what the image is without them and with which
        benched="$IMAGE_PREFIX/$n-bench:$v"
        build "$benched" "$n-bench" "$CONTEXT_DIR/$n" -f "$DOCKER_SCRIPTS_DIR/Dockerfile.benchmarks" \
          --build-arg INSTALLED="$installed"
        base_of_own="$benched"
        labels=(--label "org.duplexeval.engine=$(docker image inspect -f '{{.Id}}' "$installed")"
                --label "org.duplexeval.benchmarks=$("$PYTHON" "$DOCKER_SCRIPTS_DIR/images.py" benchmark-digests)") ;;
  esac
  build "$tag" "$n" "$CONTEXT_DIR/$n" -f "$(component_dir "$n")/Dockerfile" --build-arg INSTALLED="$base_of_own" \
    "${labels[@]}"
  docker tag "$tag" "$IMAGE_PREFIX/$n:latest"
  if ! out="$(docker run --rm --network none "$tag" --help 2>&1)"; then
    printf '%s\n' "$out" | tail -n 20 >&2; die "$tag: \`--help\` failed"
  fi
  log "checked: docker run --rm --network none $tag --help"
  case "$n" in "$RUNNER_PREFIX"*)
    # `list`: a runner's line, then an indented note line only when a module it needs is missing
    if ! out="$(docker run --rm --network none "$tag" list 2>"$logdir/list-$n.err")"; then
      tail -n 20 "$logdir/list-$n.err" >&2; die "$tag: \`list\` failed"
    fi
    if [ -z "$(printf '%s\n' "$out" | grep -v '^ ')" ] || [[ "$out" == " "* || "$out" == *$'\n '* ]]; then
      printf '%s\n' "$out" >&2; die "$tag: \`list\` shows no runner, or one that is not available"
    fi
    log "checked: docker run --rm --network none $tag list: $(printf '%s\n' "$out" | cut -d' ' -f1 | paste -sd ' ')"
  esac
done
