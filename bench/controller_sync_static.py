#!/usr/bin/env python3
"""`tocsin controller`'s initial sync and first evaluation, against a server that costs nothing.

The test API server (Python, JSON encoded per request) takes longer to serve 200 list pages than
the controller takes to decode and check them, so bench/controller_scale.py's wall time measures
the server. Here every list page is encoded once, before the clock starts, and served as bytes
(as a real API server serves lists from its watch cache); watches are held open with nothing in
them. Printed: the wall time and CPU time from the controller's start to /readyz 200, its peak
RSS, and `tocsin audit --from` on the same file (the yardstick) in the same run.

  python3 bench/controller_sync_static.py --snapshot /tmp/tocsin-scale/cluster-10000-100000.json
"""
import argparse
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
from cluster import write_plain_kubeconfig  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_scale import proc_status  # noqa: E402
COLLECTIONS = {"/api/v1/nodes": ("Node", "v1"), "/api/v1/pods": ("Pod", "v1"),
               "/apis/apps/v1/daemonsets": ("DaemonSet", "apps/v1"),
               "/apis/batch/v1/jobs": ("Job", "batch/v1")}


def pages(items, kind, api_version, limit):
    out = []
    chunks = [items[i:i + limit] for i in range(0, len(items), limit)] or [[]]
    for i, chunk in enumerate(chunks):
        meta = {"resourceVersion": "1000"}
        if i + 1 < len(chunks):
            meta["continue"] = str(i + 1)
        out.append(json.dumps({"kind": kind + "List", "apiVersion": api_version,
                               "metadata": meta, "items": chunk}).encode())
    return out


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--snapshot", required=True)
    a.add_argument("--tocsin", default=os.path.join(SOURCE, "build", "release", "tocsin"))
    args = a.parse_args()
    t = subprocess.run(["/usr/bin/time", "-f", "%e %M %U %S", args.tocsin, "audit", "--from",
                        args.snapshot, "-o", "json", "--observe-only"], capture_output=True, text=True)
    secs, kb, user, system = t.stderr.strip().splitlines()[-1].split()
    result = {"audit_from_seconds": float(secs), "audit_from_cpu_seconds": round(float(user) + float(system), 2),
              "audit_from_peak_rss_mib": round(int(kb) / 1024, 1)}
    with open(args.snapshot) as f:
        doc = json.load(f)
    by_kind = {}
    for item in doc["items"]:
        by_kind.setdefault(item.get("kind"), []).append(item)
    served = {path: pages(by_kind.get(kind, []), kind, av, 500)
              for path, (kind, av) in COLLECTIONS.items()}
    del doc, by_kind
    stop = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            q = dict(urllib.parse.parse_qsl(url.query))
            if url.path in served and q.get("watch") == "1":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                stop.wait()
                return
            if url.path in served:
                body = served[url.path][int(q.get("continue", "0"))]
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tmp = tempfile.mkdtemp(prefix="tocsin-sync-")
    kc = os.path.join(tmp, "kubeconfig")
    write_plain_kubeconfig(kc, f"http://127.0.0.1:{server.server_address[1]}")
    log = os.path.join(tmp, "log")
    start = time.monotonic()
    ctl = subprocess.Popen([args.tocsin, "controller", "--kubeconfig", kc, "--listen", "127.0.0.1:0",
                            "--no-events"], stderr=open(log, "w"))
    try:
        port = None
        while port is None:
            with open(log) as f:
                m = re.search(r"on 127\.0\.0\.1:(\d+)", f.read())
            port = int(m.group(1)) if m else None
            time.sleep(0.01)
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except urllib.error.HTTPError:
                pass
            time.sleep(0.01)
        result["controller_sync_and_first_evaluation_seconds"] = round(time.monotonic() - start, 2)
        st = proc_status(ctl.pid)
        result["controller_cpu_seconds"] = round(st["cpu_s"], 2)
        result["controller_peak_rss_mib"] = round(st["VmHWM"] / 2**20, 1)
        result["ratio_wall_to_audit_from"] = round(
            result["controller_sync_and_first_evaluation_seconds"] / result["audit_from_seconds"], 2)
    finally:
        stop.set()
        ctl.terminate()
        ctl.wait()
        server.shutdown()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
