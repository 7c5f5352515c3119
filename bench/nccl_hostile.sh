#!/usr/bin/env bash
# Peak memory of `tocsin nccl` on hostile logs (issue 13): 100,000 fake NCCL processes in one
# file, read in order (under 32 MiB) and in parallel (a 200 MB file). Prints a Markdown table.
#
# usage: bench/nccl_hostile.sh [BIN]     (run `make build` first)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/release/tocsin}
DIR=$(mktemp -d /tmp/tocsin-bench-hostile-XXXXXX)
trap 'rm -rf "$DIR"' EXIT

python3 - "$DIR" <<'PY'
import sys
d = sys.argv[1]
def block(f, n, salt):
    for i in range(n):
        pre = "fake-%s-%06d:%d:%d [0] NCCL INFO " % (salt, i, i, i)
        f.write(pre + "Using network Socket\n")
        f.write(pre + "NET/Socket : Using [0]eth0:10.0.%d.%d<0>\n" % (i // 256 % 256, i % 256))
        f.write(pre + "comm 0x1 rank %d nranks 100000 cudaDev 0 busId 1000 commId 0x%x - Init "
                "COMPLETE\n" % (i, i))
with open(d + "/small.log", "w") as f:  # ~29 MB: read in order
    block(f, 100000, "a")
with open(d + "/big.log", "w") as f:    # ~200 MB: read in parallel chunks
    for r in range(7):
        block(f, 100000, "r%d" % r)
PY

echo "| log | size | processes in it | kept | NCCL lines dropped | time | peak RSS |"
echo "|---|---|---|---|---|---|---|"
for name in small big; do
  f="$DIR/$name.log"
  /usr/bin/time -f "%e %M" -o "$DIR/time" "$BIN" nccl "$f" -o json >"$DIR/out" || true
  read -r secs rss <"$DIR/time"
  read -r kept dropped < <(python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['inventory']['summary']
print(s['processes'], s['dropped_lines'])" "$DIR/out")
  procs=$(( $(grep -c 'Init COMPLETE' "$f") ))
  echo "| $name | $(( $(stat -c %s "$f") / 1000000 )) MB | $procs | $kept | $dropped | ${secs} s | $(( rss / 1024 )) MB |"
done
