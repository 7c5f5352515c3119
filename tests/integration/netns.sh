#!/usr/bin/env bash
# Four test "nodes" as network namespaces on a Linux bridge (the kernel needs netns, veth, bridge).
#   netns.sh up PREFIX      -> PREFIX1..PREFIX4 with eth0 = 10.77.0.1..4/24 on bridge PREFIXbr
#   netns.sh shape PREFIX N RATE   -> tbf RATE on node N's eth0 (its egress)
#   netns.sh down PREFIX
# PREFIX must be short (interface names are at most 15 characters). Root only.
set -euo pipefail
cmd=${1:?up|shape|down}
p=${2:?prefix}
case "$cmd" in
  up)
    ip link add "${p}br" type bridge
    for i in 1 2 3 4; do
      ip netns add "${p}$i"
      ip link add "${p}v$i" type veth peer name eth0 netns "${p}$i"
      ip link set "${p}v$i" master "${p}br"
      ip link set "${p}v$i" up
      ip -n "${p}$i" addr add "10.77.0.$i/24" dev eth0
      ip -n "${p}$i" link set eth0 up
      ip -n "${p}$i" link set lo up
    done
    ip link set "${p}br" up
    ;;
  shape)
    ip netns exec "${p}${3:?node}" tc qdisc replace dev eth0 root tbf rate "${4:?rate}" \
      burst 256kb latency 50ms
    ;;
  down)
    for i in 1 2 3 4; do ip netns del "${p}$i" 2>/dev/null || true; done
    ip link del "${p}br" 2>/dev/null || true
    ;;
esac
