#!/usr/bin/env bash
# Stops exactly what tools/k8s/up.sh started (by the pids it recorded, in reverse order) and
# removes its state: STATE (K8S_STATE, default build/k8s) and etcd's data folder.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${K8S_STATE:-$ROOT/build/k8s}
[ -d "$STATE" ] || exit 0

if [ -f "$STATE/pids" ]; then
  # Reverse order: the kubelet first (it cleans up its pods and namespaces on SIGTERM), etcd last.
  mapfile -t entries < <(tac "$STATE/pids")
  for entry in "${entries[@]}"; do
    read -r name pid <<<"$entry"
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "k8s-down: $name ($pid) did not stop within 10 s of SIGTERM: killing its process group" >&2
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
    fi
  done
fi
if [ -f "$STATE/etcd-data" ]; then
  data=$(cat "$STATE/etcd-data")
  case "$data" in /dev/shm/tocsin-k8s-etcd.*) rm -rf "$data" ;; esac
fi
rm -rf "$STATE"
