#!/usr/bin/env python3
"""Latency of `tocsin controller`'s admission webhook (issue 19's goal: p99 at most 20 ms on
loopback over 1,000 reviews).

Runs the controller with --admission-listen against the test API server (tests/k8s_api/server.py,
fixture cluster testdata/clusters/plugin-crashloop.json: the webhook does not read the cluster
beyond its context), a serving certificate from a throwaway CA (openssl), and sends --reviews
AdmissionReviews of a bad Job (testdata/jobs/bad-job-ib-disabled.yaml: two warnings each) over one
keep-alive TLS connection, as the API server does. Prints one JSON line: p50, p99, max in ms and
the controller's RSS after the run (the module tocsin-https.so and OpenSSL loaded).

  python3 bench/admission_latency.py [--reviews 1000] [--tocsin build/release/tocsin]
"""
import argparse
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import yaml

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
from cluster import write_plain_kubeconfig  # noqa: E402


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--reviews", type=int, default=1000)
    p.add_argument("--tocsin", default=os.path.join(SOURCE, "build", "release", "tocsin"))
    a = p.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="tocsin-admission-bench-")
    d = tmp.name
    ca, key, csr, crt = (os.path.join(d, n) for n in ("ca", "tls.key", "tls.csr", "tls.crt"))
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca + ".key", "-out",
            ca + ".crt", "-days", "2", "-subj", "/CN=tocsin-bench-ca")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj",
            "/CN=webhook")
    openssl("x509", "-req", "-in", csr, "-CA", ca + ".crt", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", os.path.join(d, "ext"))

    server = subprocess.Popen(
        [sys.executable, os.path.join(SOURCE, "tests", "k8s_api", "server.py"), "--snapshot",
         os.path.join(SOURCE, "testdata", "clusters", "plugin-crashloop.json"),
         "--max-seconds", "600"], stdout=subprocess.PIPE, text=True)
    ctl = None
    try:
        api_port = int(server.stdout.readline().split()[1])
        kc = os.path.join(d, "kubeconfig")
        write_plain_kubeconfig(kc, f"http://127.0.0.1:{api_port}")
        port = free_port()
        ctl = subprocess.Popen([a.tocsin, "controller", "--kubeconfig", kc, "--listen",
                                "127.0.0.1:0", "--admission-listen", f"127.0.0.1:{port}",
                                "--tls-cert-file", crt, "--tls-private-key-file", key],
                               stderr=subprocess.DEVNULL)
        with open(os.path.join(SOURCE, "testdata", "jobs", "bad-job-ib-disabled.yaml")) as f:
            obj = yaml.safe_load(f)
        obj["metadata"] = {"name": "bad", "namespace": "default"}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": {"uid": "u", "kind": {"group": "batch", "version": "v1",
                                                            "kind": "Job"},
                                       "operation": "CREATE", "object": obj}})
        ctx = ssl.create_default_context(cafile=ca + ".crt")
        deadline = time.monotonic() + 30
        while True:  # until the webhook listens (bounded)
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=ctx)
                conn.connect()
                break
            except OSError:
                if time.monotonic() > deadline or ctl.poll() is not None:
                    sys.exit("the controller's webhook never listened")
                time.sleep(0.1)
        times = []
        for _ in range(a.reviews):
            t = time.perf_counter()
            conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            times.append(time.perf_counter() - t)
            if r.status != 200 or b"warnings" not in data:
                sys.exit(f"unexpected answer: {r.status} {data[:200]!r}")
        conn.close()
        times.sort()
        n = len(times)
        print(json.dumps({"reviews": n, "p50_ms": round(times[n // 2] * 1000, 2),
                          "p99_ms": round(times[min(n - 1, int(n * 0.99))] * 1000, 2),
                          "max_ms": round(times[-1] * 1000, 2),
                          "controller_rss_mib": round(rss_mib(ctl.pid), 1)}))
    finally:
        if ctl is not None:
            ctl.terminate()
            ctl.wait(timeout=15)
        server.terminate()
        server.wait(timeout=15)


if __name__ == "__main__":
    main()
