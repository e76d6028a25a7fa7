#!/usr/bin/env bash
# Build the wheelhouse (.build/wheelhouse) on the host from the pinned requirements of every
# package an image installs, so that images install Python packages with no network:
#   pip wheel -c constraints.txt -w .build/wheelhouse -r components/<name>/requirements.txt
# plus torch (CPU build, from constraints.txt), pip and the build backend (setuptools, wheel), and
# the --no-deps packages (docker/reqs.py NODEPS_DEFAULT) with --no-deps.
#   docker/wheelhouse.sh [NAME ...]      the requirements of images NAME (a component, or
#                                        runner-<x>: the core's, runners/<x>'s and those of the
#                                        duplexeval runner packages it depends on; `common`: the
#                                        bases'); default: common and every image (docker/images.py)
# Env: PYTHON (default .venv/bin/python, else python3), WHEELHOUSE_PIP_ARGS (extra pip
# arguments, e.g. an index or --find-links that holds the CPU torch wheel).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x "$REPO_ROOT/.venv/bin/python" ]; then PYTHON="$REPO_ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
# shellcheck disable=SC2206
extra=(${WHEELHOUSE_PIP_ARGS:-})
# (the sed drops pip's noise about this machine's extra local indexes)
pipw() {
  "$PYTHON" -m pip wheel -q --disable-pip-version-check -w "$WHEELHOUSE" --find-links "$WHEELHOUSE" "${extra[@]}" "$@" \
    2> >(sed -u '/is ignored: it is neither a file nor a directory/d' >&2)
}

mkdir -p "$WHEELHOUSE/.stamps"
names=("$@")
if [ ${#names[@]} = 0 ]; then
  mapfile -t names < <(echo common; image_components)
fi
# the requirements files, once each (a runner package is read by its image and those depending on it)
reqfiles="$(python3 "$DOCKER_SCRIPTS_DIR/images.py" requirements "${names[@]}")" \
  || die "cannot list the requirements of: ${names[*]}"
mapfile -t reqfiles <<<"$reqfiles"

t0=$SECONDS
torch_pin="$(grep -E '^torch==' "$CONSTRAINTS" | head -n1 || true)"
[ -n "$torch_pin" ] || die "constraints.txt pins no torch"
stamp_base="$(cat "$CONSTRAINTS"; echo "$torch_pin pip setuptools wheel ${WHEELHOUSE_PIP_ARGS:-}")"
if [ "$(printf '%s' "$stamp_base" | sha256sum)" != "$(cat "$WHEELHOUSE/.stamps/_base" 2>/dev/null)" ]; then
  log "wheelhouse: $torch_pin, pip, setuptools, wheel"
  pipw -c "$CONSTRAINTS" "$torch_pin" pip setuptools wheel
  printf '%s' "$stamp_base" | sha256sum >"$WHEELHOUSE/.stamps/_base"
fi

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
for req in "${reqfiles[@]}"; do
  [ -f "$req" ] || die "no $req"
  rel="${req#"$REPO_ROOT/components/"}"; n="${rel%/requirements.txt}"   # judge, runners/moshi, ...
  key="${n//\//+}"                                                       # stamp: judge, runners+moshi
  stamp="$(cat "$req" "$CONSTRAINTS"; echo "$NODEPS_PACKAGES ${WHEELHOUSE_PIP_ARGS:-}")"
  if [ "$(printf '%s' "$stamp" | sha256sum)" = "$(cat "$WHEELHOUSE/.stamps/$key" 2>/dev/null)" ]; then
    log "wheelhouse: $n up to date"; continue
  fi
  python3 "$DOCKER_SCRIPTS_DIR/reqs.py" split "$req" "$tmp/$key"
  log "wheelhouse: $n ($(wc -l <"$tmp/$key/deps.txt") pinned, $(wc -l <"$tmp/$key/nodeps.txt") --no-deps)"
  [ -s "$tmp/$key/deps.txt" ] && pipw -c "$CONSTRAINTS" -r "$tmp/$key/deps.txt"
  [ -s "$tmp/$key/nodeps.txt" ] && pipw --no-deps -r "$tmp/$key/nodeps.txt"
  printf '%s' "$stamp" | sha256sum >"$WHEELHOUSE/.stamps/$key"
done

# The torch in it must be the CPU build: no CUDA wheels, exactly one torch wheel.
torch_wheels=("$WHEELHOUSE"/torch-*.whl)
[ ${#torch_wheels[@]} = 1 ] || die "wheelhouse holds ${#torch_wheels[@]} torch wheels: ${torch_wheels[*]}"
case "$(basename "${torch_wheels[0]}")" in *+cpu*) ;; *) log "warning: ${torch_wheels[0]} has no +cpu tag";; esac
if ls "$WHEELHOUSE" | grep -E -i '^(nvidia_|triton-)' >/dev/null; then
  die "wheelhouse holds CUDA wheels (nvidia-*/triton): a non-CPU torch was resolved somewhere"
fi
log "wheelhouse: $(ls "$WHEELHOUSE"/*.whl | wc -l) wheels, $(du -sh "$WHEELHOUSE" | cut -f1), $((SECONDS - t0)) s"
