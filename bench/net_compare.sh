#!/usr/bin/env bash
# `tocsin bench net` beside the yardsticks, on the same paths in one run (issue 3):
#   p2p at 1 MiB and 64 MiB: tocsin (tcp sockets, libfabric tcp) vs iperf3, fi_pingpong -p tcp,
#   ucx_perftest (UCX_TLS=tcp), on loopback and between two network namespaces (veth pair);
#   allreduce 64 MiB on 4 local ranks: tocsin's ring vs Open MPI's MPI_Allreduce over its tcp BTL.
# Prints a Markdown table (median of RUNS runs, GB/s with GB = 1e9). Root (namespaces, packages).
# Usage: bench/net_compare.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
BIN=$PWD/build/release/tocsin
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 2; }
need=()
for p in iperf3 libfabric-bin ucx-utils openmpi-bin libopenmpi-dev iproute2; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
DIR=$(mktemp -d /tmp/tocsin-bench-net-XXXXXX)
NS=tbn$$
cleanup() {
  pkill -f "iperf3 -s -1 -p 52" 2>/dev/null || true
  ip netns del "${NS}a" 2>/dev/null || true
  ip netns del "${NS}b" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
ip netns add "${NS}a"
ip netns add "${NS}b"
ip link add "${NS}x" netns "${NS}a" type veth peer name "${NS}y" netns "${NS}b"
ip -n "${NS}a" addr add 10.79.0.1/24 dev "${NS}x"
ip -n "${NS}b" addr add 10.79.0.2/24 dev "${NS}y"
for n in a b; do ip -n "${NS}$n" link set lo up; done
ip -n "${NS}a" link set "${NS}x" up
ip -n "${NS}b" link set "${NS}y" up

cat > "$DIR/allreduce.c" <<'C'
/* MPI_Allreduce (float sum) of BYTES, ITERS timed after 3 warm-ups; prints busbw in GB/s as
   nccl-tests defines it: bytes / time * 2(n-1)/n, time averaged over ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n, r;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  size_t bytes = strtoull(argv[1], 0, 10), count = bytes / 4;
  int iters = atoi(argv[2]);
  float *s = malloc(bytes), *d = malloc(bytes);
  for (size_t i = 0; i < count; ++i) s[i] = (float)((r + i) % 97);
  for (int i = 0; i < 3; ++i) MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = (MPI_Wtime() - t0) / iters, sum;
  MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (r == 0) printf("%.4f\n", bytes / (sum / n) / 1e9 * 2.0 * (n - 1) / n);
  MPI_Finalize();
  return 0;
}
C
mpicc -O2 -o "$DIR/allreduce" "$DIR/allreduce.c"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
runs() { for _ in $(seq "$RUNS"); do "$@"; done | median; }
inA() { if [ "$1" = ns ]; then shift; ip netns exec "${NS}a" "$@"; else shift; "$@"; fi; }
inB() { if [ "$1" = ns ]; then shift; ip netns exec "${NS}b" "$@"; else shift; "$@"; fi; }
addr() { [ "$1" = ns ] && echo 10.79.0.1 || echo 127.0.0.1; }
iters() { [ "$1" -ge $((64 << 20)) ] && echo 10 || echo 200; }

tocsin_p2p() {  # path size transport...
  local path=$1 size=$2 port=$((29600 + RANDOM % 300)); shift 2
  local args=(bench net -t p2p -b "$size" -e "$size" -n "$(iters "$size")" -w 3 -c 0
              --straggler-ratio 0 -o json "$@")
  if [ "$path" = lo ]; then
    "$BIN" "${args[@]}" --local 2 > "$DIR/p2p.json"
  else
    export TOCSIN_BENCH_TOKEN=b  # (a flag would warn: ps shows it)
    inB ns "$BIN" "${args[@]}" --rank 1 --world-size 2 --coordinator 10.79.0.1:$port > /dev/null &
    inA ns "$BIN" "${args[@]}" --rank 0 --world-size 2 --coordinator 10.79.0.1:$port \
      > "$DIR/p2p.json"
    wait
  fi
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["inventory"]["tests"]["p2p"]["rows"][0]["busbw_gbps"])' "$DIR/p2p.json"
}
iperf() {  # path size: one stream, 1 MiB writes (iperf3 refuses larger blocks), 3 s
  local port=$((5200 + RANDOM % 50))
  inA "$1" iperf3 -s -1 -p $port -B "$(addr "$1")" > /dev/null 2>&1 &
  sleep 0.3  # iperf3 -s has no readiness signal
  inB "$1" iperf3 -c "$(addr "$1")" -p $port -t 3 -l 1M -J |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e9)'
  wait
}
pingpong() {  # path size: fi_pingpong -p tcp -e msg; its MB/sec is bytes/usec per one-way xfer
  local port=$((47600 + RANDOM % 300))
  inA "$1" fi_pingpong -p tcp -e msg -I "$(iters "$2")" -S "$2" -B $port > /dev/null 2>&1 &
  sleep 0.3
  inB "$1" fi_pingpong -p tcp -e msg -I "$(iters "$2")" -S "$2" -P $port "$(addr "$1")" |
    awk 'NR > 1 && $6 ~ /^[0-9.]+$/ {print $6 / 1000}'
  wait
}
ucx() {  # path size: ucx_perftest tag_bw over UCX_TLS=tcp; MB/s there is 2^20 bytes
  local port=$((13300 + RANDOM % 300))
  inA "$1" env UCX_TLS=tcp ucx_perftest -p $port > /dev/null 2>&1 &
  sleep 0.5
  inB "$1" env UCX_TLS=tcp ucx_perftest "$(addr "$1")" -p $port -t tag_bw -s "$2" \
    -n "$(iters "$2")" 2>/dev/null | awk '/^Final:/ {print $7 * 1048576 / 1e9}'
  wait
}

echo "| path | size | tocsin tcp | tocsin fabric (tcp) | iperf3 | fi_pingpong tcp | ucx_perftest tcp | tocsin best / best yardstick |"
echo "|---|---|---|---|---|---|---|---|"
for path in lo ns; do
  for size in $((1 << 20)) $((64 << 20)); do
    t=$(runs tocsin_p2p $path $size --transport tcp)
    f=$(runs tocsin_p2p $path $size --transport fabric --provider tcp)
    i=$(runs iperf $path $size)
    p=$(runs pingpong $path $size)
    u=$(runs ucx $path $size)
    awk -v path=$path -v s=$size -v t="$t" -v f="$f" -v i="$i" -v p="$p" -v u="$u" 'BEGIN {
      best = i; if (p > best) best = p; if (u > best) best = u;
      mine = t > f ? t : f;
      printf "| %s | %d MiB | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
        path == "lo" ? "loopback" : "netns veth", s / 1048576, t, f, i, p, u, mine / best }'
  done
done
echo
allreduce_tocsin() {  # ranks
  "$BIN" bench net --local "$1" -t allreduce -b 64M -e 64M -n 10 -w 3 -c 0 -o json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["inventory"]["tests"]["allreduce"]["rows"][0]["busbw_gbps"])'
}
allreduce_mpi() {  # ranks
  mpirun --allow-run-as-root --oversubscribe -np "$1" --mca btl tcp,self \
    --mca btl_tcp_if_include lo "$DIR/allreduce" $((64 << 20)) 10 2>/dev/null | tail -1
}
p2p4() {  # our p2p on the same path, 64 MiB
  tocsin_p2p lo $((64 << 20)) --transport tcp
}
q=$(runs p2p4)
echo "| allreduce 64 MiB, local ranks over TCP loopback | tocsin ring busbw | Open MPI busbw | tocsin / Open MPI | tocsin p2p 64 MiB | allreduce busbw / p2p |"
echo "|---|---|---|---|---|---|"
for n in 2 4; do
  a=$(runs allreduce_tocsin $n)
  m=$(runs allreduce_mpi $n)
  awk -v n=$n -v a="$a" -v m="$m" -v q="$q" 'BEGIN {
    printf "| %d ranks | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, a, m, a / m, q, a / q }'
done
