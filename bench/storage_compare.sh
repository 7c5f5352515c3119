#!/usr/bin/env bash
# `tocsin bench storage` beside fio on the same path, same block size, job count and direct flag
# (issues 4 and 22): sequential write (with the final fsync, fio end_fsync=1) and read (page
# cache dropped first: fio invalidate=1, tocsin POSIX_FADV_DONTNEED), and 4 KiB write+fsync
# latency (fio fsync=1: its write clat plus its sync latency, per percentile).
#
# The tools alternate round by round, and which goes first alternates too (tocsin, fio; then fio,
# tocsin), so a slow spell of the VM cannot favour one. Per row: the medians of RUNS rounds, and
# the median of the per-round ratios. Then where the time goes: the share of each phase spent
# inside the read/write calls (mean latency x operations / workers / phase time; the rest is the
# tool's own work between calls: per-block overhead, submission, checking when it is inline).
# (No CPU time per byte here: tocsin's probe runs in a child that is never waited for, by design,
# since a hung mount may keep it from exiting, so the shell's accounting cannot see it.)
# tocsin checks what it reads (its default, CHECK=1) unless CHECK=0; fio checks nothing.
# Usage: [CHECK=0|1] [FIO_HUGE=0|1] bench/storage_compare.sh [RUNS] [SIZE_PER_JOB] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
SIZE=${2:-512M}
JOBS=${3:-2}
CHECK=${CHECK:-1}
BIN=$PWD/build/release/tocsin
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 2; }
dpkg-query -W -f='${Status}' fio 2>/dev/null | grep -q "install ok installed" ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fio >/dev/null
WORK=$(mktemp -d /var/tmp/tocsin-bench-storage-XXXXXX)
SHM=$(mktemp -d /dev/shm/tocsin-bench-storage-XXXXXX)
trap 'rm -rf "$WORK" "$SHM"' EXIT
# FIO_HUGE=1: fio's buffers in huge pages too (hugetlbfs, --iomem=mmaphuge), fio at its best; by
# default fio runs as a user runs it, its buffers in 4 KiB pages.
FIO_MEM=()
if [ "${FIO_HUGE:-0}" = 1 ]; then
  HUGE=$(mktemp -d /tmp/tocsin-bench-huge-XXXXXX)
  OLD_PAGES=$(cat /proc/sys/vm/nr_hugepages)
  mount -t hugetlbfs none "$HUGE"
  echo $((OLD_PAGES + 2 * JOBS + 2)) > /proc/sys/vm/nr_hugepages
  trap 'rm -rf "$WORK" "$SHM"; umount "$HUGE"; rmdir "$HUGE"; echo "$OLD_PAGES" > /proc/sys/vm/nr_hugepages' EXIT
  FIO_MEM=(--iomem="mmaphuge:$HUGE/fio")
fi
PY=/usr/bin/python3
# The disk's request counters (reads completed, sectors read): the size of the requests the reads
# became, after any split (a request takes a limited number of segments: queue/max_segments).
DEV_STAT=/sys/dev/block/$(stat -c '%Hd:%Ld' "$WORK")/stat
reads() { if [ -r "$DEV_STAT" ]; then awk '{print $1 ":" $3}' "$DEV_STAT"; else echo "0:0"; fi; }

# dir direct(0/1) name round -> one record line
tocsin_run() {
  local flags=()
  [ "$2" = 1 ] && flags+=(--direct)
  local r0 r1
  r0=$(reads)  # only the read phase reads: the run's delta is its requests
  "$BIN" bench storage --path "$1" -j "$JOBS" \
    --size "$SIZE" --block 1M --phase write --phase read --phase fsync --fsync-ops 200 \
    -c "$CHECK" "${flags[@]}" -o json > "$WORK/t.json"
  r1=$(reads)
  $PY - "$WORK/t.json" "$3" "$4" "$JOBS" "$r0" "$r1" <<'PY'
import json, sys
path, name, rnd, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
(i0, s0), (i1, s1) = (map(int, a.split(":")) for a in sys.argv[5:7])
kib = (s1 - s0) * 512 / 1024 / (i1 - i0) if i1 > i0 else -1  # per read request
p = {x["phase"]: x for x in json.load(open(path))["inventory"]["phases"]}
def share(x):  # time inside the calls / phase time, per worker
    return x["latency"]["mean_us"] * x["ops"] / jobs / (x["seconds"] * 1e6)
print("tocsin", name, rnd, p["write"]["gbps"], p["read"]["gbps"], p["fsync"]["latency"]["p50_us"],
      p["fsync"]["latency"]["p99_us"], share(p["write"]), share(p["read"]),
      -1 if p["read"].get("wrong") is None else p["read"]["wrong"], kib)
PY
}

fio_run() {  # dir direct name round
  local d=$1/fio common=(--directory="$1/fio" --ioengine=psync --group_reporting --output-format=json
                          --numjobs="$JOBS" --direct="$2" "${FIO_MEM[@]}")
  mkdir -p "$d"
  fio --name=seq --rw=write --bs=1M --size="$SIZE" \
    --end_fsync=1 "${common[@]}" > "$WORK/fw.json"
  local r0 r1
  r0=$(reads)
  fio --name=seq --rw=read --bs=1M --size="$SIZE" \
    --invalidate=1 "${common[@]}" > "$WORK/fr.json"
  r1=$(reads)
  fio --name=sync --rw=write --bs=4k --size=800K --fsync=1 "${common[@]}" > "$WORK/ff.json"
  rm -rf "$d"
  $PY - "$WORK" "$3" "$4" "$JOBS" "$r0" "$r1" <<'PY'
import json, sys
work, name, rnd, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
(i0, s0), (i1, s1) = (map(int, a.split(":")) for a in sys.argv[5:7])
kib = (s1 - s0) * 512 / 1024 / (i1 - i0) if i1 > i0 else -1  # per read request
def job(f):
    return json.load(open(f"{work}/{f}"))["jobs"][0]
w, r, f = job("fw.json")["write"], job("fr.json")["read"], job("ff.json")
def share(x):  # psync: the completion latency is the call's time; runtime is the group's, in ms
    return x["clat_ns"]["mean"] * x["total_ios"] / jobs / (x["runtime"] * 1e6)
fw, fs = f["write"]["clat_ns"]["percentile"], f["sync"]["lat_ns"]["percentile"]
print("fio", name, rnd, w["bw_bytes"] / 1e9, r["bw_bytes"] / 1e9,
      (fw["50.000000"] + fs["50.000000"]) / 1e3, (fw["99.000000"] + fs["99.000000"]) / 1e3,
      share(w), share(r), -1, kib)
PY
}

: > "$WORK/records"
for cfg in "$WORK 0 disk(ext4)" "$WORK 1 disk(ext4)" "$SHM 0 tmpfs"; do
  set -- $cfg
  dir=$1 direct=$2 name="$3/$2"
  for round in $(seq "$RUNS"); do
    if [ $((round % 2)) = 1 ]; then
      tocsin_run "$dir" "$direct" "$name" "$round" >> "$WORK/records"
      fio_run "$dir" "$direct" "$name" "$round" >> "$WORK/records"
    else
      fio_run "$dir" "$direct" "$name" "$round" >> "$WORK/records"
      tocsin_run "$dir" "$direct" "$name" "$round" >> "$WORK/records"
    fi
  done
done
[ -n "${KEEP_RECORDS:-}" ] && cp "$WORK/records" "$KEEP_RECORDS"

$PY - "$WORK/records" "$RUNS" "$CHECK" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
runs, check = sys.argv[2], sys.argv[3]
cfgs = list(dict.fromkeys(r[1] for r in rows))
def col(tool, cfg, i):
    return {int(r[2]): float(r[i]) for r in rows if r[0] == tool and r[1] == cfg}
def med(v):
    return statistics.median(v)
print(f"Medians of {runs} alternating rounds (tocsin checks its reads: {'yes' if check == '1' else 'no'}); "
      "ratio: median of the per-round ratios.\n")
print("| path | direct | write GB/s tocsin / fio | ratio | read GB/s tocsin / fio | ratio | "
      "write+fsync p50 us tocsin / fio | ratio | p99 us tocsin / fio | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|")
for c in cfgs:
    name, direct = c.split("/")
    cells = []
    for i, fmt in ((3, "%.2f"), (4, "%.2f"), (5, "%.0f"), (6, "%.0f")):
        t, f = col("tocsin", c, i), col("fio", c, i)
        ratio = med([t[k] / f[k] for k in t if k in f and f[k] > 0])
        cells.append(f"{fmt % med(t.values())} / {fmt % med(f.values())} | {ratio:.2f}")
    print(f"| {name} | {'yes' if direct == '1' else 'no'} | " + " | ".join(cells) + " |")
print("\nWhere the time goes (medians): the share of each phase spent inside the read/write calls, "
      "and the disk's read requests (KiB each, from its counters; '-' when none reached it).\n")
print("| path | direct | write in calls tocsin / fio | read in calls tocsin / fio | "
      "read request KiB tocsin / fio |")
print("|---|---|---|---|---|")
for c in cfgs:
    name, direct = c.split("/")
    cells = []
    for i in (7, 8):
        cells.append(f"{med(col('tocsin', c, i).values()) * 100:.1f} % / "
                     f"{med(col('fio', c, i).values()) * 100:.1f} %")
    kib = [med(col(t, c, 10).values()) for t in ("tocsin", "fio")]
    cells.append(" / ".join("-" if k < 0 else f"{k:.0f}" for k in kib))
    print(f"| {name} | {'yes' if direct == '1' else 'no'} | " + " | ".join(cells) + " |")
wrong = [float(r[9]) for r in rows if r[0] == "tocsin" and float(r[9]) > 0]
if wrong:
    print(f"\ntocsin found wrong blocks in {len(wrong)} runs")
    sys.exit(1)
PY
