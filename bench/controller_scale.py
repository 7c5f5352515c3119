#!/usr/bin/env python3
"""`tocsin controller` at scale, beside `tocsin audit --from` on the same objects.

1. A synthetic cluster (tests/k8s_api/synth.py: --nodes, --pods) as one snapshot file.
2. `tocsin audit --from` on it: wall time and peak RSS (GNU time).
3. The test API server serves the same objects; `tocsin controller` lists and watches them: the
   time from its start to /readyz 200 (every informer synced and the first evaluation done) and
   its peak RSS then.
4. Under --churn pod updates a second (the server modifies random pods), --samples times: a node's
   Ready condition is flipped at the server and the time until /metrics shows (or stops showing)
   node.not-ready for it is the lag; p50, p99 and max are printed, with the controller's RSS
   and CPU time over the churn (one core is what it may use: its evaluation is one thread).

  python3 bench/controller_scale.py --nodes 10000 --pods 100000 --churn 100 --samples 40
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
from cluster import write_plain_kubeconfig  # noqa: E402


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"{}")


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    out["cpu_s"] = (int(fields[11]) + int(fields[12])) / tick
    return out


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--nodes", type=int, default=10000)
    a.add_argument("--pods", type=int, default=100000)
    a.add_argument("--churn", type=float, default=100)
    a.add_argument("--samples", type=int, default=40)
    a.add_argument("--tocsin", default=os.path.join(SOURCE, "build", "release", "tocsin"))
    a.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tocsin-scale"))
    args = a.parse_args()
    os.makedirs(args.work, exist_ok=True)
    snap = os.path.join(args.work, f"cluster-{args.nodes}-{args.pods}.json")
    if not os.path.exists(snap):
        subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "k8s_api", "synth.py"),
                        "--nodes", str(args.nodes), "--pods", str(args.pods), "-o", snap], check=True)
    result = {"nodes": args.nodes, "pods": args.pods, "snapshot_bytes": os.path.getsize(snap)}

    t = subprocess.run(["/usr/bin/time", "-f", "%e %M", args.tocsin, "audit", "--from", snap,
                        "-o", "json", "--observe-only"], capture_output=True, text=True)
    secs, kb = t.stderr.strip().splitlines()[-1].split()
    result["audit_from_seconds"] = float(secs)
    result["audit_from_peak_rss_mib"] = round(int(kb) / 1024, 1)

    server = subprocess.Popen([sys.executable, os.path.join(SOURCE, "tests", "k8s_api", "server.py"),
                               "--snapshot", snap, "--bookmark-seconds", "60",
                               "--max-seconds", "3600"], stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])
    base = f"http://127.0.0.1:{port}"
    kc = os.path.join(args.work, "kubeconfig")
    write_plain_kubeconfig(kc, base)
    log = open(os.path.join(args.work, "controller.log"), "w")
    start = time.monotonic()
    ctl = subprocess.Popen([args.tocsin, "controller", "--kubeconfig", kc, "--listen",
                            "127.0.0.1:0", "--no-events"], stderr=log)
    try:
        port_ctl = None
        while port_ctl is None:
            with open(log.name) as f:
                m = re.search(r"on 127\.0\.0\.1:(\d+)", f.read())
            port_ctl = int(m.group(1)) if m else None
            time.sleep(0.05)
        mbase = f"http://127.0.0.1:{port_ctl}"
        while True:
            try:
                if get(mbase + "/readyz")[0] == 200:
                    break
            except urllib.error.HTTPError:
                pass
            time.sleep(0.05)
        result["controller_sync_and_first_evaluation_seconds"] = round(time.monotonic() - start, 2)
        st = proc_status(ctl.pid)
        result["controller_cpu_seconds_to_ready"] = round(st["cpu_s"], 2)
        result["controller_peak_rss_mib_at_ready"] = round(st["VmHWM"] / 2**20, 1)

        # The same lists through `tocsin audit` live: what the server's own speed costs.
        t = subprocess.run(["/usr/bin/time", "-f", "%e %M %U %S", args.tocsin, "audit",
                            "--kubeconfig", kc, "-o", "json", "--observe-only"],
                           capture_output=True, text=True)
        secs, kb, user, system = t.stderr.strip().splitlines()[-1].split()
        result["audit_live_seconds"] = float(secs)
        result["audit_live_cpu_seconds"] = round(float(user) + float(system), 2)
        result["audit_live_peak_rss_mib"] = round(int(kb) / 1024, 1)
        node = json.loads(get(base + "/api/v1/nodes?limit=1")[1])["items"][0]
        name = node["metadata"]["name"]
        post(base + "/_control/churn", {"per_second": args.churn, "seconds": 3600})
        cpu0, t0 = proc_status(ctl.pid)["cpu_s"], time.monotonic()
        lags = []
        want_present = True
        for i in range(args.samples):
            conds = [c for c in node["status"].get("conditions", []) if c["type"] != "Ready"]
            conds.append({"type": "Ready", "status": "False" if want_present else "True",
                          "reason": "KubeletNotReady" if want_present else "KubeletReady",
                          "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
            node["status"]["conditions"] = conds
            flipped = time.monotonic()
            post(base + "/_control/apply", node)
            needle = f'tocsin_finding{{check="node.not-ready",severity="error",subject="{name}"}}'
            while True:
                present = needle in get(mbase + "/metrics")[1]
                if present == want_present:
                    break
                if time.monotonic() - flipped > 60:
                    raise SystemExit(f"sample {i}: no change on /metrics within 60 s")
                time.sleep(0.02)  # a scrape renders every finding: do not make it the load
            lags.append(time.monotonic() - flipped)
            want_present = not want_present
        st = proc_status(ctl.pid)
        churn_s = time.monotonic() - t0
        # The churn alone, nobody scraping: what the watches and evaluations cost.
        cpu1, t1 = st["cpu_s"], time.monotonic()
        time.sleep(30)
        st2 = proc_status(ctl.pid)
        result["controller_cpu_cores_churn_unscraped"] = round(
            (st2["cpu_s"] - cpu1) / (time.monotonic() - t1), 2)
        result["controller_rss_mib_after_churn_unscraped"] = round(st2["VmRSS"] / 2**20, 1)
        result.update({
            "churn_pod_updates_per_second": args.churn,
            "lag_seconds": {"p50": round(pct(lags, 50), 3), "p99": round(pct(lags, 99), 3),
                            "max": round(max(lags), 3), "samples": len(lags)},
            "controller_cpu_cores_under_churn_and_scrapes": round((st["cpu_s"] - cpu0) / churn_s, 2),
            "controller_rss_mib_under_churn": round(st["VmRSS"] / 2**20, 1),
            "controller_peak_rss_mib": round(st["VmHWM"] / 2**20, 1),
        })
        _, metrics = get(mbase + "/metrics")
        for line in metrics.splitlines():
            if line.startswith("tocsin_controller_evaluation_duration_seconds_sum") or \
                    line.startswith("tocsin_controller_evaluation_duration_seconds_count"):
                k, v = line.split()
                result[k] = float(v)
    finally:
        ctl.terminate()
        ctl.wait()
        server.kill()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
