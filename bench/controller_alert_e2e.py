#!/usr/bin/env python3
"""From a failure to a page, end to end, on the real control plane (tools/k8s/up.sh).

`tocsin controller` watches the cluster; a real Prometheus scrapes it every 15 s (job
tocsin-controller) and evaluates deploy/controller/alerts.yaml every 15 s. Measured:
  quiet      no tocsin alert pending or firing on the healthy cluster for --quiet seconds
  detect     a device-plugin DaemonSet that crash-loops on every fabric node is created:
             seconds to daemonset.not-ready (error or critical) on /metrics, and to
             TocsinDevicePluginNotReady firing in Prometheus
  clear      the DaemonSet is fixed: seconds to the finding leaving /metrics, and to the alert
             leaving Prometheus

  make k8s-up && TOCSIN_K8S_ENV=build/k8s/env python3 bench/controller_alert_e2e.py
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
from cluster import Cluster, load_env  # noqa: E402

IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def quietly(fn):
    """fn, with a server not answering yet read as "not yet"."""
    def call():
        try:
            return fn()
        except OSError:
            return None
    return call


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--tocsin", default=os.path.join(SOURCE, "build", "release", "tocsin"))
    a.add_argument("--quiet", type=float, default=120)
    args = a.parse_args()
    env, why = load_env()
    if env is None:
        raise SystemExit(why)
    c = Cluster(env)
    tmp = tempfile.mkdtemp(prefix="tocsin-e2e-")
    ns = c.namespace("tocsin-e2e")
    ctl_port, prom_port = free_port(), free_port()
    ctl = subprocess.Popen([args.tocsin, "controller", "--kubeconfig", c.kubeconfig, "--listen",
                            f"127.0.0.1:{ctl_port}"], stderr=open(os.path.join(tmp, "ctl.log"), "w"))
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 15s, evaluation_interval: 15s}\n"
                f"rule_files: [{os.path.join(SOURCE, 'deploy', 'controller', 'alerts.yaml')}]\n"
                "scrape_configs:\n- job_name: tocsin-controller\n"
                f"  static_configs: [{{targets: ['127.0.0.1:{ctl_port}']}}]\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml",
                             f"--storage.tsdb.path={tmp}/data",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "prom.log"), "w"))
    base = f"http://127.0.0.1:{prom_port}"
    out = {}
    try:
        Cluster.wait_for(quietly(lambda: get_json(base + "/api/v1/targets")["data"]["activeTargets"][0]
                                 ["health"] == "up"), 90, "Prometheus scraping the controller",
                         interval=0.5)
        # Quiet: the healthy cluster, from two rule evaluations after the first scrape (before it,
        # absent() is rightly pending). Other namespaces may hold other tests' leftovers: only
        # this bench's subjects and the controller's health alerts count.
        time.sleep(30)
        start = time.monotonic()
        noisy = {}
        while time.monotonic() - start < args.quiet:
            for al in get_json(base + "/api/v1/alerts")["data"]["alerts"]:
                if al["labels"]["alertname"].startswith("TocsinController") or \
                        al["labels"].get("subject", "").startswith(ns):
                    noisy[(al["labels"]["alertname"], al["labels"].get("subject"))] = al["state"]
            time.sleep(5)
        out["quiet_seconds"] = args.quiet
        out["quiet_alerts_pending_or_firing"] = [list(k) + [v] for k, v in noisy.items()]
        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
              "metadata": {"name": "rdma-shared-dp-ds", "namespace": ns},
              "spec": {"selector": {"matchLabels": {"name": "rdma-shared-dp-ds"}}, "template": {
                  "metadata": {"labels": {"name": "rdma-shared-dp-ds"}},
                  "spec": {"nodeSelector": {"network.nvidia.com/rdma": "true"},
                           "containers": [{"name": "plugin", "image": IMAGE,
                                           "command": ["sh", "-c", "exit 1"]}]}}}}
        subject = f"{ns}/rdma-shared-dp-ds"
        t0 = time.monotonic()
        c.kubectl("apply", "-f", "-", stdin=json.dumps(ds))
        pat = re.compile(r'tocsin_finding\{check="daemonset.not-ready",severity="(error|critical)",'
                         r'subject="' + re.escape(subject) + '"}')
        Cluster.wait_for(lambda: pat.search(metrics(ctl_port)), 60, "the finding", interval=0.1)
        out["detect_metrics_seconds"] = round(time.monotonic() - t0, 2)

        def firing():
            return [al for al in get_json(base + "/api/v1/alerts")["data"]["alerts"]
                    if al["labels"]["alertname"] == "TocsinDevicePluginNotReady"
                    and al["labels"].get("subject") == subject and al["state"] == "firing"]
        fired = Cluster.wait_for(firing, 300, "the alert firing", interval=1)
        out["detect_alert_firing_seconds"] = round(time.monotonic() - t0, 1)
        out["alert"] = {"labels": fired[0]["labels"], "annotations": fired[0]["annotations"]}
        t1 = time.monotonic()
        c.kubectl("patch", "daemonset", "-n", ns, "rdma-shared-dp-ds", "--type=json", "-p",
                  json.dumps([{"op": "replace", "path": "/spec/template/spec/containers/0/command",
                               "value": ["sh", "-c", "sleep 3600"]}]))
        Cluster.wait_for(lambda: not pat.search(metrics(ctl_port)), 120, "the finding cleared",
                         interval=0.1)
        out["clear_metrics_seconds"] = round(time.monotonic() - t1, 2)
        Cluster.wait_for(lambda: not firing(), 300, "the alert resolved", interval=1)
        out["clear_alert_seconds"] = round(time.monotonic() - t1, 1)
    finally:
        ctl.terminate()
        ctl.wait()
        prom.terminate()
        prom.wait()
        c.kubectl("delete", "namespace", ns, "--wait=false")
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
