#!/usr/bin/env bash
# `tocsin agent` beside node_exporter (Debian's prometheus-node-exporter) in the same run, both
# reading the same fixture node with 8 GPUs and 8 HCAs (testdata/nodes/ib-8x8; node_exporter
# through --path.sysfs/--path.procfs): RSS after start, CPU per scrape, /metrics latency at RATE
# scrapes/s for SECONDS (one keep-alive connection, as Prometheus), and RSS after TOTAL scrapes.
# Usage: bench/agent_footprint.sh [RATE] [SECONDS] [TOTAL]
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-100}
SECONDS_=${2:-60}
TOTAL=${3:-10000}
BIN=$PWD/build/release/tocsin
ROOT=$PWD/testdata/nodes/ib-8x8
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 2; }
command -v prometheus-node-exporter >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    prometheus-node-exporter >/dev/null
WORK=$(mktemp -d /tmp/tocsin-bench-agent-XXXXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BIN" agent --no-kube --root "$ROOT" --listen 127.0.0.1:19464 2>"$WORK/agent.log" &
PIDS+=($!)
AGENT=$!
prometheus-node-exporter --web.listen-address=127.0.0.1:19100 --path.sysfs="$ROOT/sys" \
  --path.procfs="$ROOT/proc" --path.rootfs="$ROOT" 2>"$WORK/ne.log" &
PIDS+=($!)
NE=$!

python3 - "$RATE" "$SECONDS_" "$TOTAL" "$AGENT" "$NE" <<'PY'
import http.client, os, sys, time

rate, seconds, total, agent_pid, ne_pid = (float(sys.argv[1]), float(sys.argv[2]),
                                           int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
hz = os.sysconf("SC_CLK_TCK")

def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

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
    return time.perf_counter() - t, len(body)

def pct(sorted_v, q):
    return sorted_v[min(len(sorted_v) - 1, int(q * len(sorted_v)))]

wait_ready(19464, "/readyz")
wait_ready(19100, "/metrics")
time.sleep(2)  # the agent's first task round and node_exporter's start settle
rows = []
for name, port, pid in (("tocsin agent", 19464, agent_pid), ("node_exporter 1.5.0", 19100, ne_pid)):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    _, size = scrape(conn)
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
        scrape(conn)
    rss_total = rss_kib(pid)
    lat.sort()
    rows.append((name, size, rss0, rss_paced, rss_total, cpu_per * 1e3, pct(lat, 0.5) * 1e3,
                 pct(lat, 0.99) * 1e3, lat[-1] * 1e3))
print("| exporter | /metrics bytes | RSS after start (MiB) | RSS after %d paced (MiB) | "
      "RSS after %d scrapes (MiB) | CPU per scrape (ms) | p50 (ms) | p99 (ms) | max (ms) |"
      % (int(rate * seconds), total))
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| %s | %d | %.1f | %.1f | %.1f | %.3f | %.2f | %.2f | %.2f |"
          % (r[0], r[1], r[2] / 1024, r[3] / 1024, r[4] / 1024, r[5], r[6], r[7], r[8]))
PY
