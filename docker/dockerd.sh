#!/usr/bin/env bash
# Start, stop or query the project's own Docker daemon (no systemd needed).
#   docker/dockerd.sh start    start dockerd in the background (idempotent); prints `export DOCKER_HOST=...`
#   docker/dockerd.sh stop     stop it by its pid, remove the docker0 bridge
#   docker/dockerd.sh status   print pid and DOCKER_HOST; exit 1 when not running
#   docker/dockerd.sh env      print `export DOCKER_HOST=...` (for eval)
# Usage in a shell:  eval "$(docker/dockerd.sh start)"
set -euo pipefail
. "$(dirname "$0")/lib.sh"

running_pid() {
  [ -f "$DOCKERD_PIDFILE" ] || return 1
  local pid; pid="$(cat "$DOCKERD_PIDFILE" 2>/dev/null)" || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

answers() { DOCKER_HOST="$OUR_DOCKER_HOST" docker version >/dev/null 2>&1; }

cmd_start() {
  if pid="$(running_pid)"; then
    log "dockerd already running (pid $pid)"
    echo "export DOCKER_HOST=$OUR_DOCKER_HOST"; return 0
  fi
  [ "$(id -u)" = 0 ] || die "dockerd must be started as root"
  command -v dockerd >/dev/null || die "dockerd not installed: apt-get install -y docker.io"
  mkdir -p "$DOCKERD_DATA_ROOT" "$DOCKERD_RUN_DIR"
  rm -f "$DOCKERD_SOCK" "$DOCKERD_PIDFILE"
  local t0=$SECONDS
  # setsid: the daemon outlives the shell (and make) that started it
  # shellcheck disable=SC2086
  setsid dockerd \
    --data-root "$DOCKERD_DATA_ROOT/data" \
    --exec-root "$DOCKERD_RUN_DIR/exec" \
    --host "$OUR_DOCKER_HOST" \
    --pidfile "$DOCKERD_PIDFILE" \
    ${DUPLEXEVAL_DOCKERD_ARGS:-} \
    >>"$DOCKERD_LOG" 2>&1 </dev/null &
  local child=$!
  local i
  for i in $(seq 1 300); do          # 60 s
    if [ -S "$DOCKERD_SOCK" ] && answers; then break; fi
    if ! kill -0 "$child" 2>/dev/null; then
      tail -n 20 "$DOCKERD_LOG" >&2; die "dockerd exited; log: $DOCKERD_LOG"
    fi
    sleep 0.2
  done
  answers || { tail -n 20 "$DOCKERD_LOG" >&2; die "dockerd did not answer within 60 s; log: $DOCKERD_LOG"; }
  log "dockerd started (pid $(cat "$DOCKERD_PIDFILE"), $((SECONDS - t0)) s, log $DOCKERD_LOG)"
  echo "export DOCKER_HOST=$OUR_DOCKER_HOST"
}

cmd_stop() {
  local pid
  if ! pid="$(running_pid)"; then log "dockerd not running"; return 0; fi
  kill "$pid"
  local i
  for i in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then die "dockerd (pid $pid) still running after 30 s"; fi
  rm -f "$DOCKERD_PIDFILE"
  # the bridge it made, unless another dockerd still uses it
  if ip link show docker0 >/dev/null 2>&1 && ! pgrep -x dockerd >/dev/null; then ip link delete docker0 || true; fi
  log "dockerd stopped (pid $pid)"
}

cmd_status() {
  local pid
  if pid="$(running_pid)" && answers; then
    echo "dockerd running: pid $pid, DOCKER_HOST=$OUR_DOCKER_HOST, data root $DOCKERD_DATA_ROOT/data"
  else
    echo "dockerd not running (DOCKER_HOST would be $OUR_DOCKER_HOST)"; return 1
  fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) echo "export DOCKER_HOST=$OUR_DOCKER_HOST" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
