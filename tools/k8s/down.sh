#!/usr/bin/env bash
# Stops exactly what tools/k8s/up.sh started (the processes it recorded, checked to be the same
# processes, in reverse order), removes the test kubelet's network namespaces if it could not, and
# removes the state: STATE (K8S_STATE, default build/k8s), only if up.sh made it, and etcd's data.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${K8S_STATE:-$ROOT/build/k8s}
MARKER=.tocsin-k8s-state
log() { echo "k8s-down: $*" >&2; }
[ -d "$STATE" ] || exit 0
STATE=$(cd "$STATE" && pwd)
if [ ! -f "$STATE/$MARKER" ]; then
  if [ -n "$(ls -A "$STATE")" ]; then
    log "$STATE was not made by up.sh (no $MARKER): left alone"
    exit 1
  fi
  rmdir "$STATE"
  exit 0
fi
if [ -z "${TOCSIN_K8S_LOCKED:-}" ]; then
  exec 8>"$STATE.lock"
  flock -w 600 8 || { log "another up.sh or down.sh holds $STATE.lock"; exit 1; }
fi
# shellcheck source=tools/k8s/proc.sh
. "$ROOT/tools/k8s/proc.sh"

if [ -f "$STATE/pids" ]; then
  # Reverse order: the kubelet first (it cleans up its pods and namespaces on SIGTERM), etcd last.
  mapfile -t entries < <(tac "$STATE/pids")
  for entry in "${entries[@]}"; do
    read -r name pid start <<<"$entry"
    same_process "$pid" "$start" || continue
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do same_process "$pid" "$start" || break; sleep 0.1; done
    if same_process "$pid" "$start"; then
      log "$name ($pid) did not stop within 10 s of SIGTERM: killing its process group"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
    fi
  done
fi
# The kubelet removes its namespaces and bridge when it stops; if it died first, they are here.
if [ -f "$STATE/env" ] && [ "$(id -u)" -eq 0 ]; then
  prefix=$(sed -n 's/^K8S_NETNS_PREFIX=//p' "$STATE/env")
  if [ -n "$prefix" ]; then
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}[0-9]+$"); do
      ip netns del "$ns" 2>/dev/null && log "removed network namespace $ns the kubelet left"
    done
    ip link del "${prefix}br" 2>/dev/null && log "removed bridge ${prefix}br the kubelet left"
  fi
fi
if [ -f "$STATE/etcd-data" ]; then
  data=$(cat "$STATE/etcd-data")
  case "$data" in /dev/shm/tocsin-k8s-etcd.*) rm -rf "$data" ;; esac
fi
rm -rf "$STATE"
