#!/usr/bin/env bash
# `tocsin audit --from` on a generated snapshot of NODES nodes and PODS pods, beside
# `python3 -c 'import json,sys; json.load(open(sys.argv[1]))'` on the same file (issue 6's
# yardstick), the two alternating round by round (RUNS rounds) so that a slow spell of a shared
# machine cannot favour one: medians of the times and of each round's ratio, peak RSS, and the
# load average before and after. Prints a Markdown table.
#
# usage: bench/audit_snapshot.sh [NODES] [PODS] [RUNS]     (run `make build` first)
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-10000}
PODS=${2:-100000}
RUNS=${3:-5}
BIN=build/release/tocsin
DIR=$(mktemp -d /tmp/tocsin-bench-audit-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
python3 bench/make_k8s_snapshot.py "$DIR/snapshot.json" "$NODES" "$PODS"
cat "$DIR/snapshot.json" >/dev/null
size=$(stat -c %s "$DIR/snapshot.json")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# One timed run: prints "seconds max_rss_kb".
timed() {
  /usr/bin/time -f "%e %M" -o "$DIR/time" "$@" >"$DIR/out" || true
  tail -1 "$DIR/time"
}
rows=""
for _ in $(seq "$RUNS"); do
  read -r ts trss < <(timed "$BIN" audit --from "$DIR/snapshot.json" --now 2026-11-29T00:00:00Z -o json)
  read -r ps prss < <(timed python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$DIR/snapshot.json")
  rows+="$ts $trss $ps $prss"$'\n'
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| snapshot | tocsin audit --from | python3 json.load | time ratio (tocsin / python, median of rounds) | tocsin peak RSS / file size | python peak RSS | load before / after |"
echo "|---|---|---|---|---|---|---|"
printf '%s' "$rows" | awk -v n="$NODES" -v p="$PODS" -v b="$size" -v lb="$load_before" -v la="$load_after" '
  function median(a, k,   i, j, t) {
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((k + 1) / 2)]
  }
  { k++; ts[k] = $1; ps[k] = $3; r[k] = $1 / $3; if ($2 > trss) trss = $2; if ($4 > prss) prss = $4 }
  END {
    printf "| %d nodes, %d pods, %.0f MB | %.2f s, %.0f MB | %.2f s, %.0f MB | %.3f | %.2f | %.0f MB | %s / %s |\n",
      n, p, b/1e6, median(ts, k), trss/1024, median(ps, k), prss/1024, median(r, k), trss*1024/b, prss/1024, lb, la }'
