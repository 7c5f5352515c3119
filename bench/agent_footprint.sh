#!/usr/bin/env bash
# `tocsin agent` beside node_exporter (Debian's prometheus-node-exporter) in the same run, all
# reading the same fixture node with 8 GPUs and 8 HCAs (testdata/nodes/ib-8x8; node_exporter
# through --path.sysfs/--path.procfs): the agent as a plain exporter (--no-kube) and with its
# Kubernetes writes on (conditions, Events, fabric facts, against the test API server of
# tests/k8s_api, as node gpu-node-01, heartbeat every 5 s; and attributing devices to pods
# through a fake kubelet PodResources socket, tests/podresources). Per exporter: RSS after start (the
# agent's: the sum over every process it keeps, children included), CPU per scrape, /metrics
# latency at RATE scrapes/s for SECONDS (one keep-alive connection, as Prometheus), and RSS after
# TOTAL scrapes; ROUNDS rounds, medians printed, with the load average before and after (the
# machine may be shared). The agent with writes makes each API call in a short-lived child; a
# fourth exporter, the same with --kube-in-process, is the footprint of the calls made in the
# agent itself; what libraries of libcurl's the former maps after its writes is printed.
# Usage: bench/agent_footprint.sh [RATE] [SECONDS] [TOTAL] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-100}
SECONDS_=${2:-60}
TOTAL=${3:-10000}
ROUNDS=${4:-1}
BIN=${TOCSIN_BINARY:-$PWD/build/release/tocsin}
ROOT=$PWD/testdata/nodes/ib-8x8
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 2; }
command -v prometheus-node-exporter >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    prometheus-node-exporter >/dev/null
WORK=$(mktemp -d /tmp/tocsin-bench-agent-XXXXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

# The test API server (plain HTTP, a bearer token): what the agent writes to.
python3 tests/k8s_api/server.py --max-seconds 86400 --token bench \
  --snapshot testdata/clusters/healthy.json >"$WORK/api.port" 2>"$WORK/api.log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/api.port" ] && break; sleep 0.1; done
API_PORT=$(head -1 "$WORK/api.port" | tr -dc 0-9)
[ -n "$API_PORT" ] || { echo "the test API server did not start: $(cat "$WORK/api.log")" >&2; exit 1; }
cat >"$WORK/kubeconfig" <<KC
apiVersion: v1
kind: Config
current-context: bench
clusters: [{name: bench, cluster: {server: "http://127.0.0.1:$API_PORT"}}]
contexts: [{name: bench, context: {cluster: bench, user: bench}}]
users: [{name: bench, user: {token: bench}}]
KC

"$BIN" agent --no-kube --root "$ROOT" --listen 127.0.0.1:19464 2>"$WORK/agent.log" &
PIDS+=($!)
AGENT=$!
# The kubelet's PodResources socket (a fake serving one pod with the node's 8 GPUs and 8 HCAs):
# the agent with writes also attributes devices to pods, as deployed (issue 20's budget). The pod
# is the training job's pod on gpu-node-01 in the API server's snapshot (so its labels are read
# and it is exported); its HCAs by PCI address, as an SR-IOV or host-device plugin gives them (the
# fixture's GPUs have no driver information files: their UUIDs count as unresolved).
python3 - "$WORK/answer.json" "$ROOT" <<'ANSWER'
import json, os, sys
ib = os.path.join(sys.argv[2], "sys/class/infiniband")
hcas = sorted(os.path.basename(os.path.realpath(os.path.join(ib, d, "device")))
              for d in os.listdir(ib))
json.dump({"pods": [{"namespace": "ml", "name": "llama-pt-master-0",
                     "containers": [{"name": "trainer", "devices": [
                         {"resource": "nvidia.com/gpu", "ids": [f"GPU-bench-{i}" for i in range(8)]},
                         {"resource": "nvidia.com/hostdev", "ids": hcas}]}]}]},
          open(sys.argv[1], "w"))
ANSWER
/usr/bin/python3 tests/podresources/fake_kubelet.py --socket "$WORK/kubelet.sock" \
  --answer "$WORK/answer.json" >"$WORK/kubelet.out" 2>"$WORK/kubelet.log" &
PIDS+=($!)
for _ in $(seq 100); do grep -q ready "$WORK/kubelet.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$WORK/kubelet.out" || { echo "the fake kubelet did not start: $(cat "$WORK/kubelet.log")" >&2; exit 1; }
NODE_NAME=gpu-node-01 KUBECONFIG='' "$BIN" agent --root "$ROOT" --listen 127.0.0.1:19465 \
  --kubeconfig "$WORK/kubeconfig" --pod-resources-socket "$WORK/kubelet.sock" --reconcile 5s \
  --heartbeat 5s 2>"$WORK/agent-kube.log" &
PIDS+=($!)
AGENT_KUBE=$!
# The same with every API call in the agent's own process (libcurl mapped for good): the
# footprint before the calls moved into a short-lived child each.
NODE_NAME=gpu-node-01 KUBECONFIG='' "$BIN" agent --root "$ROOT" --listen 127.0.0.1:19466 \
  --kubeconfig "$WORK/kubeconfig" --no-pod-resources --reconcile 5s --heartbeat 5s \
  --kube-in-process 2>"$WORK/agent-kube-inproc.log" &
PIDS+=($!)
AGENT_INPROC=$!
prometheus-node-exporter --web.listen-address=127.0.0.1:19100 --path.sysfs="$ROOT/sys" \
  --path.procfs="$ROOT/proc" --path.rootfs="$ROOT" 2>"$WORK/ne.log" &
PIDS+=($!)
NE=$!

python3 - "$RATE" "$SECONDS_" "$TOTAL" "$ROUNDS" "$AGENT" "$AGENT_KUBE" "$NE" "$AGENT_INPROC" <<'PY'
import http.client, os, statistics, sys, time

rate, seconds, total, rounds = (float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]),
                                int(sys.argv[4]))
agent_pid, kube_pid, ne_pid, inproc_pid = (int(a) for a in sys.argv[5:9])
hz = os.sysconf("SC_CLK_TCK")

def children():
    """ppid -> pids, from /proc."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(d))
    return out

def rss_kib(pid):
    """VmRSS of pid and every process below it (what it keeps: children included)."""
    tree, todo, total = children(), [pid], 0
    while todo:
        p = todo.pop()
        todo += tree.get(p, [])
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total

def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / hz  # utime + stime

def wait_ready(port, path):
    for _ in range(300):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit("not ready on port %d" % port)

def scrape(conn):
    t = time.perf_counter()
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, r.status
    return time.perf_counter() - t, body

def pct(sorted_v, q):
    return sorted_v[min(len(sorted_v) - 1, int(q * len(sorted_v)))]

def metric(body, name):
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")

def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])

wait_ready(19464, "/readyz")
wait_ready(19465, "/readyz")
wait_ready(19466, "/readyz")
wait_ready(19100, "/metrics")
time.sleep(2)  # the agents' first task round and node_exporter's start settle
load_before = loadavg()
exporters = (("tocsin agent --no-kube", 19464, agent_pid),
             ("tocsin agent, Kubernetes writes on", 19465, kube_pid),
             ("tocsin agent, writes on, --kube-in-process", 19466, inproc_pid),
             ("node_exporter 1.5.0", 19100, ne_pid))
rows = {name: [] for name, _, _ in exporters}
for _ in range(rounds):
    for name, port, pid in exporters:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        _, body = scrape(conn)
        rss0 = rss_kib(pid)
        cpu0 = cpu_s(pid)
        lat = []
        start = time.perf_counter()
        n = int(rate * seconds)
        for i in range(n):  # paced: request i starts at start + i/rate
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            lat.append(scrape(conn)[0])
        cpu_per = (cpu_s(pid) - cpu0) / n
        rss_paced = rss_kib(pid)
        for _ in range(max(0, total - n - 1)):  # the rest of TOTAL as fast as it answers
            _, body = scrape(conn)
        rss_total = rss_kib(pid)
        lat.sort()
        rows[name].append((len(body), rss0, rss_paced, rss_total, cpu_per * 1e3,
                           pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3, lat[-1] * 1e3,
                           metric(body, "tocsin_agent_condition_patches_total")))
print("%d round(s), medians; load average %s before, %s after" % (rounds, load_before, loadavg()))
print("| exporter | /metrics bytes | RSS after start (MiB) | RSS after %d paced (MiB) | "
      "RSS after %d scrapes (MiB) | CPU per scrape (ms) | p50 (ms) | p99 (ms) | max (ms) |"
      % (int(rate * seconds), total))
print("|---|---|---|---|---|---|---|---|---|")
for name, _, _ in exporters:
    m = [statistics.median(col) for col in zip(*rows[name])]
    print("| %s | %d | %.1f | %.1f | %.1f | %.3f | %.2f | %.2f | %.2f |"
          % (name, m[0], m[1] / 1024, m[2] / 1024, m[3] / 1024, m[4], m[5], m[6], m[7]))
kube = rows["tocsin agent, Kubernetes writes on"][-1][8]
ne = statistics.median(r[3] for r in rows["node_exporter 1.5.0"])
ak = statistics.median(r[3] for r in rows["tocsin agent, Kubernetes writes on"])
ai = statistics.median(r[3] for r in rows["tocsin agent, writes on, --kube-in-process"])
with open("/proc/%d/maps" % kube_pid) as f:
    maps = f.read()
mapped = sorted({lib for lib in ("libcurl", "libssl", "libcrypto", "libgnutls", "libgssapi",
                                 "libldap", "libssh2", "librtmp", "libnghttp2") if lib in maps})
print("mapped by the agent with writes on after them: %s" % (", ".join(mapped) or "none of "
      "libcurl, libssl, libcrypto, libgnutls, libgssapi, libldap, libssh2, librtmp, libnghttp2"))
print("Kubernetes writes on: %.2fx node_exporter's RSS (%.2fx with --kube-in-process); "
      "%d condition patches written meanwhile" % (ak / ne, ai / ne, kube))
_, body = scrape(http.client.HTTPConnection("127.0.0.1", 19465, timeout=10))
attributed = sum(1 for line in body.decode().splitlines()
                 if line.startswith("tocsin_pod_device_info{"))
print("attribution in the agent with writes on: tocsin_podresources_up %g, %d device series"
      % (metric(body, "tocsin_podresources_up"), attributed))
PY
