#!/usr/bin/env bash
# `tocsin bench net` beside the yardsticks, on the same paths in one run (issue 3):
#   p2p at 4 MiB and 64 MiB: tocsin (tcp sockets, libfabric tcp) vs fi_pingpong -p tcp and
#   ucx_perftest (UCX_TLS=tcp), iperf3 beside them, on loopback and between two network
#   namespaces (veth pair), the tools alternating round by round; where tocsin's time goes
#   (perf stat: CPU, syscalls and context switches per byte);
#   allreduce 64 MiB on 2 and 4 ranks, each rank in its own network namespace (veth pairs to one
#   bridge): tocsin's ring vs PyTorch's Gloo (torch.distributed, gloo backend) and Open MPI's
#   MPI_Allreduce over its tcp BTL, the tools alternating round by round, with the CPU time
#   (user + sys, all ranks) each spends per GB of bus traffic.
# Prints Markdown tables (median of RUNS runs, GB/s with GB = 1e9). Root (namespaces, packages).
#   MSG_ZEROCOPY against plain send() across the veth pair (bench/zerocopy_probe.c).
# Usage: [P2P_SIZES="BYTES..."] bench/net_compare.sh [RUNS] [SECTIONS]
#   (SECTIONS: any of p2p profile allreduce zerocopy; default all; P2P_SIZES: 4 MiB and 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
SECTIONS=${2:-p2p profile allreduce zerocopy}
P2P_SIZES=${P2P_SIZES:-$((4 << 20)) $((64 << 20))}
BIN=${TOCSIN_BIN:-$PWD/build/release/tocsin}
BEFORE=${TOCSIN_BEFORE:-}  # another build of tocsin (the "before" of a change): allreduce rounds run it too
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 2; }
need=()
# python3-torch is Debian's, for the system python (/usr/bin/python3), not one first on PATH.
for p in iperf3 libfabric-bin ucx-utils openmpi-bin libopenmpi-dev iproute2 python3-torch linux-perf; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
DIR=$(mktemp -d /tmp/tocsin-bench-net-XXXXXX)
NS=tbn$$
cleanup() {
  pkill -f "iperf3 -s -1 -p 52" 2>/dev/null || true
  for n in a b h r0 r1 r2 r3; do ip netns del "${NS}$n" 2>/dev/null || true; done
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
# The allreduce's ranks: namespaces r0..r3 (10.79.1.1-4), each a veth pair to a bridge in h.
ip netns add "${NS}h"
ip -n "${NS}h" link add br0 type bridge
ip -n "${NS}h" link set br0 up
for i in 0 1 2 3; do
  ip netns add "${NS}r$i"
  ip link add "${NS}v$i" netns "${NS}r$i" type veth peer name "${NS}p$i" netns "${NS}h"
  ip -n "${NS}h" link set "${NS}p$i" master br0 up
  ip -n "${NS}r$i" addr add 10.79.1.$((i + 1))/24 dev "${NS}v$i"
  ip -n "${NS}r$i" link set lo up
  ip -n "${NS}r$i" link set "${NS}v$i" up
done

cat > "$DIR/allreduce.c" <<'C'
/* MPI_Allreduce (float sum) of BYTES, ITERS timed after 3 warm-ups; prints busbw in GB/s as
   nccl-tests defines it: bytes / time * 2(n-1)/n, time averaged over ranks; then the CPU seconds
   (user + sys, all ranks) per GB of bus traffic. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
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
  double c0 = cpu(), t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double tc[2] = {(MPI_Wtime() - t0) / iters, (cpu() - c0) / iters}, sum[2];
  MPI_Reduce(tc, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  double bus = bytes * 2.0 * (n - 1) / n / 1e9;
  if (r == 0) printf("%.4f %.4f\n", bus / (sum[0] / n), sum[1] / bus);
  MPI_Finalize();
  return 0;
}
C
mpicc -O2 -o "$DIR/allreduce" "$DIR/allreduce.c"

# The median of the numbers read (a failed run is recorded as NA and left out; NA when none ran).
median() { grep -E '^[0-9.]+' | sort -n | awk '{a[NR]=$1} END {print NR ? a[int((NR+1)/2)] : "NA"}'; }
col() { awk -v c="$1" '{print $c}' | median; }  # median of one column
inA() { if [ "$1" = ns ]; then shift; ip netns exec "${NS}a" "$@"; else shift; "$@"; fi; }
inB() { if [ "$1" = ns ]; then shift; ip netns exec "${NS}b" "$@"; else shift; "$@"; fi; }
addr() { [ "$1" = ns ] && echo 10.79.0.1 || echo 127.0.0.1; }
iters() { [ "$1" -ge $((64 << 20)) ] && echo 10 || echo 200; }

p2p_busbw() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["inventory"]["tests"]["p2p"]["rows"][0]["busbw_gbps"])' "$1"; }
# One tocsin p2p run (3 warm-ups); prints its busbw. $P2P_BIN: the binary (default $BIN);
# $P2P_ITERS: timed iterations (default by size); $P2P_PERF=1: each rank under `perf stat`, its
# counters in $DIR/perf0 and $DIR/perf1 (with --local, perf0 counts both ranks).
PERF_EVENTS=task-clock,context-switches,raw_syscalls:sys_enter,user_time,system_time
tocsin_p2p() {  # path size transport...
  local path=$1 size=$2 port=$((29600 + RANDOM % 300)) bin=${P2P_BIN:-$BIN}; shift 2
  local args=(bench net -t p2p -b "$size" -e "$size" -n "${P2P_ITERS:-$(iters "$size")}" -w 3
              -c 0 --straggler-ratio 0 -o json "$@")
  local perf0=() perf1=()
  if [ -n "${P2P_PERF:-}" ]; then
    perf0=(perf stat -x "," -e "$PERF_EVENTS" -o "$DIR/perf0")
    perf1=(perf stat -x "," -e "$PERF_EVENTS" -o "$DIR/perf1")
  fi
  : > "$DIR/perf1"
  if [ "$path" = lo ]; then
    "${perf0[@]}" "$bin" "${args[@]}" --local 2 > "$DIR/p2p.json"
  else
    export TOCSIN_BENCH_TOKEN=b  # (a flag would warn: ps shows it)
    inB ns "${perf1[@]}" "$bin" "${args[@]}" --rank 1 --world-size 2 \
      --coordinator 10.79.0.1:$port > /dev/null &
    inA ns "${perf0[@]}" "$bin" "${args[@]}" --rank 0 --world-size 2 \
      --coordinator 10.79.0.1:$port > "$DIR/p2p.json"
    wait
  fi
  p2p_busbw "$DIR/p2p.json"
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

if [[ " $SECTIONS " == *" p2p "* ]]; then
# Every round runs each tool once on the same path and size, starting with a different tool each
# round, so a slow spell of the machine cannot favour one. The goal's yardsticks are fi_pingpong
# and ucx_perftest (real messages of SIZE); iperf3 (1 MiB writes of one cache-resident buffer) is
# shown beside them. Ratio: the median of each round's tocsin best / best of the two.
P2P_TOOLS=(t f p u i)
[ -n "$BEFORE" ] && P2P_TOOLS+=(b)
nt=${#P2P_TOOLS[@]}
for path in lo ns; do
  for size in $P2P_SIZES; do
    rm -f "$DIR"/p2p_[tfpuib]
    for round in $(seq "$RUNS"); do
      for k in $(seq 0 $((nt - 1))); do
        tool=${P2P_TOOLS[$(((round + k) % nt))]}
        v=
        case $tool in
          t) v=$(tocsin_p2p $path $size --transport tcp) || v= ;;
          f) v=$(tocsin_p2p $path $size --transport fabric --provider tcp) || v= ;;
          p) v=$(pingpong $path $size) || v= ;;
          u) v=$(ucx $path $size) || v= ;;
          i) v=$(iperf $path $size) || v= ;;
          b) v=$(P2P_BIN=$BEFORE tocsin_p2p $path $size --transport tcp) || v= ;;
        esac
        [[ $v =~ ^[0-9.]+$ ]] || { v=NA; echo "p2p: $tool failed ($path, $size bytes, round $round)" >&2; }
        echo "$v" >> "$DIR/p2p_$tool"
      done
    done
    # A round where a tool failed has no ratio: a missing yardstick would flatter tocsin.
    paste "$DIR"/p2p_t "$DIR"/p2p_f "$DIR"/p2p_p "$DIR"/p2p_u |
      awk '$0 !~ /NA/ {m = $1 > $2 ? $1 : $2; y = $3 > $4 ? $3 : $4; if (y > 0) print m / y}' \
      > "$DIR/p2p_r"
    [ -n "$BEFORE" ] && echo "tocsin tcp before ($BEFORE), $path $size: $(median < "$DIR/p2p_b") GB/s"
    awk -v path=$path -v s=$size -v t="$(median < "$DIR/p2p_t")" -v f="$(median < "$DIR/p2p_f")" \
        -v p="$(median < "$DIR/p2p_p")" -v u="$(median < "$DIR/p2p_u")" \
        -v i="$(median < "$DIR/p2p_i")" -v r="$(median < "$DIR/p2p_r")" '
      function g(x) { return x ~ /^[0-9.]+$/ ? sprintf("%.2f", x) : "NA" }
      BEGIN {
        printf "| %s | %d MiB | %s | %s | %s | %s | %s | %s |\n",
          path == "lo" ? "loopback" : "netns veth", s / 1048576, g(t), g(f), g(p), g(u), g(i), g(r) }' \
      >> "$DIR/p2p_table"
  done
done
echo "| path | size | tocsin tcp | tocsin fabric (tcp) | fi_pingpong tcp | ucx_perftest tcp | iperf3 (1 MiB writes) | tocsin best / best of fi_pingpong, ucx_perftest (median of rounds) |"
echo "|---|---|---|---|---|---|---|---|"
cat "$DIR/p2p_table"
echo
fi

# Where tocsin's p2p time goes (tcp transport): both ranks under `perf stat`, more iterations so
# that start-up is a small share. Per GB moved (both directions, warm-ups included): CPU seconds
# (both ranks, user + sys) and the share of it in the kernel, syscalls and context switches per MB.
p2p_profile() {  # path size [binary]
  local size=$2 n rate
  n=$([ "$size" -ge $((64 << 20)) ] && echo 40 || echo 400)
  # (called with ||, so without set -e: the run's result is checked here)
  rate=$(P2P_PERF=1 P2P_ITERS=$n P2P_BIN=${3:-$BIN} tocsin_p2p "$1" "$size" --transport tcp \
         2>/dev/null) || return 1
  [[ $rate =~ ^[0-9.]+$ ]] || return 1
  cat "$DIR/perf0" "$DIR/perf1" | awk -F, -v bytes=$((2 * (n + 3) * size)) -v rate="$rate" '
    $3 == "task-clock" {cpu += $1 / 1e3} $3 == "context-switches" {cs += $1}
    $3 ~ /sys_enter/ {sc += $1} $3 == "user_time" {u += $1 / 1e9} $3 == "system_time" {s += $1 / 1e9}
    END {gb = bytes / 1e9; mb = bytes / 1e6
         printf "%.3f %.2f %.2f %.3f %.2f\n", cpu / gb, (u + s > 0 ? s / (u + s) : 0), sc / mb,
           cs / mb, rate}'
}

if [[ " $SECTIONS " == *" profile "* ]]; then
echo "Where tocsin's p2p time goes (tcp, both ranks, perf stat; per GB moved, warm-ups included;"
echo "the run's own GB/s, slowed by perf's counting, and the cores that keeps busy: CPU s/GB x GB/s):"
echo
echo "| path | size | build | GB/s | CPU s/GB (both ranks) | cores busy | share in the kernel | syscalls per MB | context switches per MB |"
echo "|---|---|---|---|---|---|---|---|---|"
for path in lo ns; do
  for size in $P2P_SIZES; do
    rm -f "$DIR"/prof_*
    for _ in $(seq "$RUNS"); do  # now and before alternate; a failed run is left out
      p2p_profile $path $size >> "$DIR/prof_now" || echo "profile failed ($path, $size)" >&2
      if [ -n "$BEFORE" ]; then
        p2p_profile $path $size "$BEFORE" >> "$DIR/prof_before" ||
          echo "profile of $BEFORE failed ($path, $size)" >&2
      fi
    done
    for b in now before; do
      [ -s "$DIR/prof_$b" ] || continue  # (no run succeeded)
      awk -v path=$path -v s=$size -v b=$b -v c="$(col 1 < "$DIR/prof_$b")" \
          -v k="$(col 2 < "$DIR/prof_$b")" -v y="$(col 3 < "$DIR/prof_$b")" \
          -v x="$(col 4 < "$DIR/prof_$b")" -v g="$(col 5 < "$DIR/prof_$b")" 'BEGIN {
        printf "| %s | %d MiB | %s | %.2f | %.3f | %.2f | %.0f %% | %.2f | %.2f |\n",
          path == "lo" ? "loopback" : "netns veth", s / 1048576, b, g, c, c * g, k * 100, y, x }'
    done
  done
done
echo
fi

# PyTorch's Gloo: the same measurement as allreduce.c (3 warm-ups, ITERS timed, busbw and CPU
# seconds per GB of bus traffic, averaged and summed over ranks), one process per namespace.
cat > "$DIR/gloo_allreduce.py" <<'PY'
import resource, sys, time
import torch
import torch.distributed as dist
rank, n, master, nbytes, iters = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
dist.init_process_group("gloo", init_method="tcp://" + master, rank=rank, world_size=n)
x = (torch.arange(nbytes // 4, dtype=torch.float32) + rank) % 97
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
for _ in range(3):
    dist.all_reduce(x)
dist.barrier()
c0, t0 = cpu(), time.perf_counter()
for _ in range(iters):
    dist.all_reduce(x)
tc = torch.tensor([(time.perf_counter() - t0) / iters, (cpu() - c0) / iters], dtype=torch.float64)
dist.all_reduce(tc)
bus = nbytes * 2.0 * (n - 1) / n / 1e9
if rank == 0:
    print("%.4f %.4f" % (bus / (tc[0].item() / n), tc[1].item() / bus))
dist.destroy_process_group()
PY
# Open MPI across the namespaces: mpirun runs in r0 and starts one daemon per "host" r0..r3
# through an rsh agent that enters that host's namespace (the ranks' PMIx server connection is
# TCP on loopback, so a rank cannot simply enter another namespace after its daemon started it).
cat > "$DIR/rank_ns_agent.sh" <<SH
#!/bin/sh
host=\$1; shift
exec ip netns exec "${NS}\$host" sh -c "\$*"
SH
chmod +x "$DIR/rank_ns_agent.sh"
for i in 0 1 2 3; do echo "r$i slots=1"; done > "$DIR/hosts"

BYTES=$((64 << 20))
rank_ip() { echo "10.79.1.$(($1 + 1))"; }
inR() { local i=$1; shift; ip netns exec "${NS}r$i" "$@"; }
# Each prints "BUSBW CPU_S_PER_GB".
allreduce_tocsin() {  # binary ranks [flags...]: one rank per namespace
  local bin=$1 n=$2 port=$((29900 + RANDOM % 90)); shift 2
  local args=(bench net -t allreduce -b 64M -e 64M -n 10 -w 3 -c 1 -o json --world-size "$n"
              --coordinator "$(rank_ip 0):$port" "$@")
  export TOCSIN_BENCH_TOKEN=b
  for i in $(seq 1 $((n - 1))); do
    inR "$i" timeout 300 "$bin" "${args[@]}" --rank "$i" > /dev/null &
  done
  inR 0 timeout 300 "$bin" "${args[@]}" --rank 0 > "$DIR/ar.json" || true
  wait
  /usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["inventory"]["tests"]["allreduce"]; r=t["rows"][0]
assert r["wrong"] == 0, "tocsin allreduce: wrong elements"
print(r["busbw_gbps"], r.get("cpu_s_per_gb", 0))' "$DIR/ar.json"
}
allreduce_gloo() {  # ranks
  local n=$1 port=$((29990 + RANDOM % 90))
  for i in $(seq 1 $((n - 1))); do
    inR "$i" env GLOO_SOCKET_IFNAME="${NS}v$i" timeout 300 /usr/bin/python3 \
      "$DIR/gloo_allreduce.py" "$i" "$n" "$(rank_ip 0):$port" $BYTES 10 > /dev/null 2>&1 &
  done
  inR 0 env GLOO_SOCKET_IFNAME="${NS}v0" timeout 300 /usr/bin/python3 "$DIR/gloo_allreduce.py" 0 \
    "$n" "$(rank_ip 0):$port" $BYTES 10 2>/dev/null | tail -1
  wait
}
allreduce_mpi() {  # ranks (a launch that hangs, as one in 40 did here, is cut off)
  inR 0 timeout -k 10 300 mpirun --allow-run-as-root -np "$1" --hostfile "$DIR/hosts" \
    --mca plm_rsh_agent "$DIR/rank_ns_agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include 10.79.1.0/24 --mca btl tcp,self \
    --mca btl_tcp_if_include 10.79.1.0/24 "$DIR/allreduce" $BYTES 10 2>/dev/null | tail -1
}
p2p_bridge() {  # tocsin p2p 64 MiB between r0 and r1, on the allreduce's path
  local port=$((29800 + RANDOM % 90))
  local args=(bench net -t p2p -b 64M -e 64M -n 10 -w 3 -c 0 --straggler-ratio 0 -o json
              --world-size 2 --coordinator "$(rank_ip 0):$port")
  export TOCSIN_BENCH_TOKEN=b
  inR 1 timeout 300 "$BIN" "${args[@]}" --rank 1 > /dev/null &
  inR 0 timeout 300 "$BIN" "${args[@]}" --rank 0 > "$DIR/p2p.json"
  wait
  p2p_busbw "$DIR/p2p.json"
}

if [[ " $SECTIONS " == *" allreduce "* ]]; then
echo "load before the allreduce rounds: $(cut -d' ' -f1-3 /proc/loadavg)"
# Rounds alternate the tools (tocsin, gloo, mpi, then tocsin's p2p), so a slow spell of the
# machine falls on all of them.
for round in $(seq "$RUNS"); do
  for n in 2 4; do
    allreduce_tocsin "$BIN" $n >> "$DIR/tocsin$n" || echo "0 0" >> "$DIR/tocsin$n"
    if [ -n "$BEFORE" ]; then
      allreduce_tocsin "$BEFORE" $n >> "$DIR/before$n" || echo "0 0" >> "$DIR/before$n"
    fi
    allreduce_gloo $n >> "$DIR/gloo$n" || echo "0 0" >> "$DIR/gloo$n"
    allreduce_mpi $n >> "$DIR/mpi$n" || echo "0 0" >> "$DIR/mpi$n"
  done
  p2p_bridge >> "$DIR/p2p"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$BEFORE" ]; then
  echo "before ($BEFORE): 2 ranks $(col 1 < "$DIR/before2") GB/s, 4 ranks $(col 1 < "$DIR/before4") GB/s busbw"
fi
q=$(median < "$DIR/p2p")
echo
echo "| allreduce 64 MiB, ranks in namespaces (veth + bridge) | tocsin busbw | Gloo busbw | Open MPI busbw | tocsin / best yardstick | tocsin p2p 64 MiB | tocsin / p2p | CPU s/GB tocsin | Gloo | Open MPI |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in 2 4; do
  a=$(col 1 < "$DIR/tocsin$n") ac=$(col 2 < "$DIR/tocsin$n")
  g=$(col 1 < "$DIR/gloo$n") gc=$(col 2 < "$DIR/gloo$n")
  m=$(col 1 < "$DIR/mpi$n") mc=$(col 2 < "$DIR/mpi$n")
  awk -v n=$n -v a="$a" -v g="$g" -v m="$m" -v q="$q" -v ac="$ac" -v gc="$gc" -v mc="$mc" 'BEGIN {
    best = g > m ? g : m; ratio = 0; if (best > 0) ratio = a / best;
    printf "| %d ranks | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
      n, a, g, m, ratio, q, a / q, ac, gc, mc }'
done
fi

# MSG_ZEROCOPY across the veth pair, 64 MiB messages: sender and receiver CPU per GB, and how
# many zerocopy sends the kernel completed by copying. Plain and zerocopy alternate.
zc_once() {  # zc|plain
  local port=$((47900 + RANDOM % 90)) n=20
  inB ns timeout 300 "$DIR/zerocopy_probe" recv 10.79.0.2 $port $BYTES $n > "$DIR/zc_recv" &
  inA ns timeout 300 "$DIR/zerocopy_probe" send 10.79.0.2 $port $BYTES $n "$1" | tr '\n' ' '
  wait
  cat "$DIR/zc_recv"
}
if [[ " $SECTIONS " == *" zerocopy "* ]]; then
  cc -O2 -o "$DIR/zerocopy_probe" bench/zerocopy_probe.c
  for _ in $(seq "$RUNS"); do
    zc_once plain >> "$DIR/zc_plain"
    zc_once zc >> "$DIR/zc_zc"
  done
  echo
  echo "| 64 MiB sends across the veth pair | GB/s | sender CPU s/GB | receiver CPU s/GB | sends completed by copying |"
  echo "|---|---|---|---|---|"
  for m in plain zc; do
    printf "| %s | %.2f | %.3f | %.3f | %s |\n" "$([ $m = zc ] && echo MSG_ZEROCOPY || echo "send()")" \
      "$(col 1 < "$DIR/zc_$m")" "$(col 2 < "$DIR/zc_$m")" "$(col 5 < "$DIR/zc_$m")" \
      "$(col 3 < "$DIR/zc_$m") of $(col 4 < "$DIR/zc_$m")"
  done
fi
