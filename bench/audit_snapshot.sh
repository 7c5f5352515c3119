#!/usr/bin/env bash
# `tocsin audit --from` on a generated snapshot of NODES nodes and PODS pods, beside
# `python3 -c 'import json,sys; json.load(open(sys.argv[1]))'` on the same file in the same run
# (issue 6's yardstick): time (median of RUNS) and peak RSS. Prints a Markdown table.
#
# usage: bench/audit_snapshot.sh [NODES] [PODS] [RUNS]     (run `make build` first)
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-10000}
PODS=${2:-100000}
RUNS=${3:-3}
BIN=build/release/tocsin
DIR=$(mktemp -d /tmp/tocsin-bench-audit-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
python3 bench/make_k8s_snapshot.py "$DIR/snapshot.json" "$NODES" "$PODS"
cat "$DIR/snapshot.json" >/dev/null
size=$(stat -c %s "$DIR/snapshot.json")

source bench/measure.sh
read -r ts trss < <(measure "$BIN" audit --from "$DIR/snapshot.json" --now 2026-11-29T00:00:00Z -o json)
read -r ps prss < <(measure python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$DIR/snapshot.json")
findings=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["findings"]))' "$DIR/out" 2>/dev/null || echo "?")
echo "| snapshot | tocsin audit --from | python3 json.load | time ratio (tocsin / python) | tocsin peak RSS / file size | python peak RSS |"
echo "|---|---|---|---|---|---|"
awk -v n="$NODES" -v p="$PODS" -v b="$size" -v ts="$ts" -v tr="$trss" -v ps="$ps" -v pr="$prss" 'BEGIN {
  printf "| %d nodes, %d pods, %.0f MB | %.2f s, %.0f MB | %.2f s, %.0f MB | %.2f | %.2f | %.0f MB |\n",
    n, p, b/1e6, ts, tr/1024, ps, pr/1024, ts/ps, tr*1024/b, pr/1024 }'
