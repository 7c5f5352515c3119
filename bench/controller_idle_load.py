#!/usr/bin/env python3
"""Idle API load of `tocsin controller`: requests it makes to an API server where nothing changes.

Runs the controller (without --leader-elect, and again with it when --leader-elect is given) against
the test API server (tests/k8s_api/server.py, fixture cluster testdata/clusters/plugin-crashloop.json,
bookmarks every 60 s as the real server's watch cache) for --seconds, counts the requests at the
server by verb (GET /_control/requests), and prints them with the rate per hour. The first list of
each resource (the start) is reported apart from the steady state.

  python3 bench/controller_idle_load.py --seconds 3600 [--leader-elect]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
from cluster import write_plain_kubeconfig  # noqa: E402


def control(port, method, name):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/_control/{name}", method=method,
                                 data=b"{}" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=3600)
    p.add_argument("--leader-elect", action="store_true")
    p.add_argument("--tocsin", default=os.path.join(SOURCE, "build", "release", "tocsin"))
    a = p.parse_args()
    server = subprocess.Popen(
        [sys.executable, os.path.join(SOURCE, "tests", "k8s_api", "server.py"), "--snapshot",
         os.path.join(SOURCE, "testdata", "clusters", "plugin-crashloop.json"),
         "--bookmark-seconds", "60", "--max-seconds", str(a.seconds + 120)],
        stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])
    tmp = tempfile.mkdtemp(prefix="tocsin-idle-")
    kc = os.path.join(tmp, "kubeconfig")
    write_plain_kubeconfig(kc, f"http://127.0.0.1:{port}")
    args = [a.tocsin, "controller", "--kubeconfig", kc, "--listen", "127.0.0.1:0"]
    if a.leader_elect:
        args += ["--leader-elect", "--lease-namespace", "tocsin", "--identity", "bench"]
    ctl = subprocess.Popen(args, stderr=subprocess.DEVNULL)
    try:
        time.sleep(10)  # start-up: discovery and the first list of each resource
        start = control(port, "GET", "requests")
        control(port, "POST", "reset-requests")
        time.sleep(a.seconds)
        steady = control(port, "GET", "requests")
    finally:
        ctl.terminate()
        ctl.wait()
        server.kill()
    per_hour = steady["total"] * 3600.0 / a.seconds
    print(json.dumps({"seconds": a.seconds, "leader_elect": a.leader_elect,
                      "start_requests": start, "steady_requests": steady,
                      "steady_requests_per_hour": round(per_hour, 1)}, indent=1))


if __name__ == "__main__":
    main()
