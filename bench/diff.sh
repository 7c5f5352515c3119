#!/usr/bin/env bash
# `tocsin diff` on two generated snapshots of NODES GPU nodes each (staging, and production with
# the seeded differences of tools/make_drift_fixtures.py), beside `tocsin audit --from` on the
# same files (issue 18's yardstick): time (median of RUNS) and peak RSS. Prints a Markdown table.
#
# usage: bench/diff.sh [NODES] [RUNS]     (run `make build` first; BIN=... for another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-10000}
RUNS=${2:-3}
BIN=${BIN:-build/release/tocsin}
DIR=$(mktemp -d /tmp/tocsin-bench-diff-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
python3 tools/make_drift_fixtures.py --synth "$NODES" --side staging "$DIR/staging.json"
python3 tools/make_drift_fixtures.py --synth "$NODES" --side prod "$DIR/prod.json"
cat "$DIR"/*.json >/dev/null
size=$(($(stat -c %s "$DIR/staging.json") + $(stat -c %s "$DIR/prod.json")))

source bench/measure.sh
read -r ds drss < <(measure "$BIN" diff -o json "$DIR/staging.json" "$DIR/prod.json")
findings=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["findings"]))' "$DIR/out" 2>/dev/null || echo "?")
read -r as arss < <(measure "$BIN" audit --from "$DIR/staging.json" --from "$DIR/prod.json" \
                      --now 2026-11-29T00:00:00Z -o json)
echo "| snapshots | tocsin diff | findings | tocsin audit --from (both files) | goal |"
echo "|---|---|---|---|---|"
awk -v n="$NODES" -v b="$size" -v ds="$ds" -v dr="$drss" -v f="$findings" -v as="$as" -v ar="$arss" 'BEGIN {
  printf "| 2 x %d nodes, %.0f MB | %.2f s, %.0f MB | %s | %.2f s, %.0f MB | <= 5 s, <= 500 MB |\n",
    n, b/1e6, ds, dr/1024, f, as, ar/1024 }'
