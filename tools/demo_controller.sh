#!/usr/bin/env bash
# `make demo`: tocsin controller watching a test API server (tests/k8s_api/server.py) that serves a
# cluster whose RDMA device plugin crash-loops; its findings on /metrics, then SIGTERM.
set -euo pipefail
TOCSIN=${1:-build/release/tocsin}
d=$(mktemp -d /tmp/tocsin-demo-controller-XXXXXX)
cleanup() { kill "${ctl:-}" "${srv:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$d"; }
trap cleanup EXIT
python3 tests/k8s_api/server.py --snapshot testdata/clusters/plugin-crashloop.json \
  --max-seconds 60 >"$d/port" 2>/dev/null & srv=$!
for _ in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
port=$(awk '{print $2}' "$d/port")
cat >"$d/kubeconfig" <<KC
apiVersion: v1
kind: Config
current-context: demo
clusters: [{name: demo, cluster: {server: "http://127.0.0.1:$port"}}]
contexts: [{name: demo, context: {cluster: demo, user: demo}}]
users: [{name: demo, user: {}}]
KC
"$TOCSIN" controller --kubeconfig "$d/kubeconfig" --listen 127.0.0.1:0 2>"$d/log" & ctl=$!
for _ in $(seq 100); do grep -q "ready:" "$d/log" && break; sleep 0.1; done
mport=$(sed -n 's/.*serving .* on 127.0.0.1:\([0-9]*\).*/\1/p' "$d/log")
python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:$mport/metrics').read().decode())" |
  grep -E '^tocsin_(finding|check_status\{check="daemonset|controller_(watch_up|leader))'
kill -TERM "$ctl"; wait "$ctl" || true; ctl=
cat "$d/log"
