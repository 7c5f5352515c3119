#!/usr/bin/env bash
# `tocsin bench storage` beside fio on the same path, same block size, job count and direct flag
# (issue 4): sequential write (with the final fsync, fio end_fsync=1) and read (page cache
# dropped first: fio invalidate=1, tocsin POSIX_FADV_DONTNEED), and 4 KiB write+fsync latency
# (fio fsync=1: its write clat plus its sync latency, per percentile). Median of RUNS runs.
# Usage: bench/storage_compare.sh [RUNS] [SIZE_PER_JOB] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SIZE=${2:-512M}
JOBS=${3:-2}
BIN=$PWD/build/release/tocsin
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 2; }
dpkg-query -W -f='${Status}' fio 2>/dev/null | grep -q "install ok installed" ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fio >/dev/null
WORK=$(mktemp -d /tmp/tocsin-bench-storage-XXXXXX)
SHM=$(mktemp -d /dev/shm/tocsin-bench-storage-XXXXXX)
trap 'rm -rf "$WORK" "$SHM"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

tocsin_run() {  # dir direct(0/1) -> "write_gbps read_gbps fsync_p50_us fsync_p99_us"
  local flags=()
  [ "$2" = 1 ] && flags+=(--direct)
  "$BIN" bench storage --path "$1" -j "$JOBS" --size "$SIZE" --block 1M --phase write \
    --phase read --phase fsync --fsync-ops 200 -c 0 "${flags[@]}" -o json |
    python3 -c '
import json, sys
p = {x["phase"]: x for x in json.load(sys.stdin)["inventory"]["phases"]}
print(p["write"]["gbps"], p["read"]["gbps"], p["fsync"]["latency"]["p50_us"], p["fsync"]["latency"]["p99_us"])'
}
fio_run() {  # dir direct
  local d=$1/fio common=(--directory="$1/fio" --ioengine=psync --group_reporting --output-format=json
                          --numjobs="$JOBS" --direct="$2")
  mkdir -p "$d"
  local w r f
  w=$(fio --name=seq --rw=write --bs=1M --size="$SIZE" --end_fsync=1 "${common[@]}" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["write"]["bw_bytes"]/1e9)')
  r=$(fio --name=seq --rw=read --bs=1M --size="$SIZE" --invalidate=1 "${common[@]}" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"]/1e9)')
  f=$(fio --name=sync --rw=write --bs=4k --size=800K --fsync=1 "${common[@]}" |
        python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
w = j["write"]["clat_ns"]["percentile"]
s = j["sync"]["lat_ns"]["percentile"]
print((w["50.000000"] + s["50.000000"]) / 1e3, (w["99.000000"] + s["99.000000"]) / 1e3)')
  rm -rf "$d"
  echo "$w $r $f"
}
col() { awk -v c="$1" '{print $c}'; }

echo "| path | direct | write GB/s tocsin / fio | ratio | read GB/s tocsin / fio | ratio | write+fsync p50 us tocsin / fio | ratio | p99 us tocsin / fio | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for cfg in "$WORK 0 disk(ext4)" "$WORK 1 disk(ext4)" "$SHM 0 tmpfs"; do
  set -- $cfg
  dir=$1 direct=$2 name=$3
  : > "$WORK/t" ; : > "$WORK/f"
  for _ in $(seq "$RUNS"); do
    tocsin_run "$dir" "$direct" >> "$WORK/t"
    fio_run "$dir" "$direct" >> "$WORK/f"
  done
  vals=()
  for c in 1 2 3 4; do
    vals+=("$(col $c < "$WORK/t" | median)" "$(col $c < "$WORK/f" | median)")
  done
  awk -v n="$name" -v d="$direct" -v tw="${vals[0]}" -v fw="${vals[1]}" -v tr="${vals[2]}" \
      -v fr="${vals[3]}" -v t5="${vals[4]}" -v f5="${vals[5]}" -v t9="${vals[6]}" -v f9="${vals[7]}" 'BEGIN {
    printf "| %s | %s | %.2f / %.2f | %.2f | %.2f / %.2f | %.2f | %.0f / %.0f | %.2f | %.0f / %.0f | %.2f |\n",
      n, d ? "yes" : "no", tw, fw, tw / fw, tr, fr, tr / fr, t5, f5, t5 / f5, t9, f9, t9 / f9 }'
done
