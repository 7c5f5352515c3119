#!/usr/bin/env bash
# Parsing throughput of `tocsin nccl` on a synthetic 1 GB log, beside `grep -c 'NCCL INFO'` on
# the same file in the same run (issue 5's yardstick). Prints a Markdown table.
#
# usage: bench/nccl_parse.sh [SIZE_MB] [RUNS]     (run `make build` first)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${1:-1000}
RUNS=${2:-3}
BIN=build/release/tocsin
DIR=$(mktemp -d /tmp/tocsin-bench-nccl-XXXXXX)
trap 'rm -rf "$DIR"' EXIT

python3 bench/make_nccl_log.py "$DIR/heavy.log" "$SIZE_MB" >/dev/null
# A realistic mix: one NCCL line per 20 lines of training output.
python3 - "$DIR/heavy.log" "$DIR/training.log" "$SIZE_MB" <<'PY'
import sys
src, dst, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(src, "rb").read(4_000_000).split(b"\n")[:10752]
nccl = [l for l in lines if b"NCCL INFO" in l]
train = [l for l in lines if b"NCCL INFO" not in l]
out = []
for i, l in enumerate(nccl):
    out.append(l)
    out += [train[(i * 20 + k) % len(train)] for k in range(20)]
text = b"\n".join(out) + b"\n"
with open(dst, "wb") as f:
    n = 0
    while n < size_mb * 1000 * 1000:
        f.write(text)
        n += len(text)
PY

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() {  # prints "seconds max_rss_kb" of one run: wall clock in nanoseconds (time's %e has only
  # centiseconds, a tenth of a run here), peak RSS from time
  # Not /dev/null: GNU grep treats that like -q and stops at the first match.
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$DIR/time" "$@" >"$DIR/out"
  t1=$(date +%s%N)
  awk -v ns=$((t1 - t0)) -v kb="$(tail -1 "$DIR/time")" 'BEGIN { printf "%.6f %d\n", ns / 1e9, kb }'
}

echo "| log | size | NCCL lines | tocsin nccl | grep -c 'NCCL INFO' | ratio (grep time / tocsin time) | tocsin peak RSS |"
echo "|---|---|---|---|---|---|---|"
for name in training heavy; do
  f="$DIR/$name.log"
  # Written back and cached: with the logs' 2 GB still dirty, the kernel's writeback took one of
  # this VM's two cores from the measured tools.
  sync
  cat "$f" >/dev/null  # warm the page cache for both tools
  bytes=$(stat -c %s "$f")
  lines=$(grep -c 'NCCL INFO' "$f")
  # The two tools alternate, so a slow spell of the (shared, virtual) machine hits both alike.
  t_times="" g_times="" rss=0
  for _ in $(seq "$RUNS"); do
    read -r t r < <(run "$BIN" nccl "$f" -o json)
    read -r g _ < <(run grep -c 'NCCL INFO' "$f")
    t_times+="$t"$'\n'
    g_times+="$g"$'\n'
    rss=$(( r > rss ? r : rss ))
  done
  ts=$(printf '%s' "$t_times" | median)
  gs=$(printf '%s' "$g_times" | median)
  awk -v n="$name" -v b="$bytes" -v l="$lines" -v ts="$ts" -v gs="$gs" -v r="$rss" 'BEGIN {
    printf "| %s | %.0f MB | %d | %.3f s (%.0f MB/s) | %.3f s (%.0f MB/s) | %.2f | %.1f MB |\n",
      n, b/1e6, l, ts, b/1e6/ts, gs, b/1e6/gs, gs/ts, r/1024 }'
done
