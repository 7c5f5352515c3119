#!/usr/bin/env python3
"""Time to detect, end to end: from an injected failure to the notification arriving.

The stack, as a cluster runs it (README "Install in a cluster"), on this machine:
  - the real control plane (tools/k8s/up.sh) with the test kubelet's fabric nodes;
  - `tocsin controller` (deploy/controller's RBAC and drift-rbac.yaml, its ServiceAccount's
    token) with canaries and a drift baseline;
  - one `tocsin agent` per fixture node (a copy of testdata/nodes/ib-healthy each, with the
    shipped agent.yaml of deploy/agent/configmap.yaml), as host processes;
  - Prometheus scraping them every 15 s as the shipped scrape configs name them (jobs
    tocsin-agent and tocsin-controller) and evaluating the shipped rules every 15 s;
  - Alertmanager (group_wait --group-wait, one notification per alert) delivering to a webhook
    receiver in this process, which notes when each notification arrives.
First the healthy stack runs for --quiet seconds: every notification then is a false alarm. Then
every failure class is injected at once, each on its own node or object, and timed from its
injection to its alert's notification:

  row                 injection                                      expected alert
  plugin-crashloop    the RDMA device-plugin DaemonSet crash-loops   TocsinDevicePluginNotReady
  sockets-nccl-log    a pod's NCCL log says "Using network Socket"   TocsinNcclOverSockets
  sockets-counters    Ethernet busy while the RDMA ports stay idle   TocsinSilentTCPFallback
  port-down           mlx5_0 port 1 DOWN / Disabled                  TocsinRDMAPortDown
  port-rate           mlx5_1 port 1 trains at 2X (200 Gb/s)          TocsinRDMAPortDegraded
  link-errors         symbol_error rising on mlx5_2 port 1           TocsinRDMALinkErrors
  lustre-import       an OST import DISCONN                          TocsinNodeConditionTrue
  mount-missing       /mnt/lustre gone from mountinfo                  (SharedStorageDegraded,
  probe-slow          the probed folder turns slow (FUSE, 300 ms)       each)
  canary-no-rdma      no node advertises the canary's RDMA resource  TocsinCanaryFailing
  drift               the baseline holds a network attachment this   TocsinFabricDrift
                      cluster lacks (--drift-baseline: a `tocsin snapshot` of the healthy
                      stack, judged every --drift-interval)

Goal: each within 120 s (a port, down or at a lower rate, within 60 s) and no notification
while healthy. --short runs the quick version that `make test` runs (a 45 s quiet window, six
rows; beside the other tests a row passes within twice its goal, reported as late). Every panel
of the shipped dashboards (deploy/base/dashboards) is queried against this Prometheus, healthy
and faulty: a query that returns no series in either fails the run, but for a panel that lists
problems (PANEL_ROWS) when none of the failures that fill it was injected (--short, a skipped
row). Exit 1 when a row
misses its goal (--short: twice its goal) or the quiet window was not quiet; 2 when the stack could not be set up; 77
(skipped) without a control plane (TOCSIN_K8S_ENV).

  make k8s-up && TOCSIN_K8S_ENV=build/k8s/env bench/time_to_detect.sh [--quiet 900] [--json F]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import yaml

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
from cluster import Cluster, load_env  # noqa: E402
sys.path.insert(0, os.path.join(SOURCE, "bench"))
from controller_alert_e2e import free_port, get_json  # noqa: E402
from ttd_parts import Node, Proc, Receiver, write_atomic  # noqa: E402

PLUGIN_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"
RESOURCE = "rdma/hca_shared_devices_a"
GPU_NODES = ("gpu-node-01", "gpu-node-02")
DRIFT_NETWORK = "rdma-staging-net"
CANARY_NS = "tocsin"
PLUGIN_NS = "tocsin-ttd"


class Stack:
    def __init__(self, args, cluster, tmp):
        self.args, self.c, self.tmp = args, cluster, tmp
        self.procs, self.nodes, self.mounts, self.stop_writers = [], {}, [], threading.Event()
        self.receiver = Receiver()
        self.overrides = os.path.join(cluster.state, "kubelet", "node-overrides.json")

    # --- set-up -------------------------------------------------------------------------------
    def controller(self):
        c = self.c
        if c.kubectl("get", "namespace", CANARY_NS, check=False).returncode != 0:
            c.kubectl("create", "namespace", CANARY_NS)
        for f in (("controller", "rbac.yaml"), ("components", "canary", "canary-rbac.yaml"),
                  ("components", "drift", "drift-rbac.yaml")):
            c.kubectl("apply", "-f", os.path.join(SOURCE, "deploy", *f))
        token = c.service_account_token(CANARY_NS, "tocsin-controller")
        kubeconfig = c.token_kubeconfig(os.path.join(self.tmp, "sa.kubeconfig"), token)
        c.kubectl("delete", "configmap", "-n", CANARY_NS, "tocsin-canary", "--ignore-not-found")
        # Canaries every --canary-interval (short here: a row measures detection and delivery, not
        # waiting for the next round, which adds up to one interval in a cluster).
        p = Proc("controller", [self.args.tocsin, "controller", "--kubeconfig", kubeconfig,
                                "--listen", "127.0.0.1:0", "--leader-elect", "--identity", "ttd",
                                "--lease-namespace", CANARY_NS, "--event-namespace", "default",
                                "--canary", "--canary-namespace", CANARY_NS,
                                "--canary-image", "tocsin:test", "--canary-resource", RESOURCE + "=1",
                                "--canary-expect", "tcp", "--canary-interval", self.args.canary_interval,
                                "--canary-timeout", "20s", "--canary-minbytes", "1K",
                                "--canary-maxbytes", "64K",
                                "--canary-pending-deadline", self.args.canary_pending_deadline,
                                "--drift-baseline", self.baseline,
                                "--drift-interval", self.args.drift_interval],
                 self.tmp)
        self.procs.append(p)
        self.controller_port = Cluster.wait_for(p.listen_port, 30, "the controller to listen")

    def drift_baseline(self):
        """Staging as signed off: a snapshot of this healthy cluster, taken once its agents run
        (the controller compares the live cluster with it; the drift row edits it)."""
        self.baseline = os.path.join(self.tmp, "baseline.json")
        r = subprocess.run([self.args.tocsin, "snapshot", "--kubeconfig", self.c.kubeconfig,
                            "--no-pods", "--out", self.baseline],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError("tocsin snapshot: " + r.stderr)

    def device_plugin(self):
        """A healthy cluster runs its RDMA device plugin on every fabric node (else the controller
        rightly reports the nodes it does not cover)."""
        self.c.namespace(PLUGIN_NS)
        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
              "metadata": {"name": "rdma-shared-dp-ds", "namespace": PLUGIN_NS},
              "spec": {"selector": {"matchLabels": {"name": "rdma-shared-dp-ds"}}, "template": {
                  "metadata": {"labels": {"name": "rdma-shared-dp-ds"}},
                  "spec": {"nodeSelector": {"network.nvidia.com/rdma": "true"},
                           "containers": [{"name": "plugin", "image": PLUGIN_IMAGE,
                                           "command": ["sh", "-c", "sleep 3600"]}]}}}}
        self.c.kubectl("apply", "-f", "-", stdin=json.dumps(ds))

        def ready():
            st = self.c.get("daemonset", "-n", PLUGIN_NS, "rdma-shared-dp-ds").get("status", {})
            return st.get("desiredNumberScheduled", 0) > 0 and \
                st.get("numberReady") == st.get("desiredNumberScheduled")
        Cluster.wait_for(ready, 120, "the device plugin ready on every fabric node", interval=1)

    def agents(self, names):
        for name in names:
            n = Node(name, self.tmp, self.args.fixture)
            n.start(self.args.tocsin, self.tmp)
            self.procs.append(n.proc)
            self.nodes[name] = n
        for n in self.nodes.values():
            n.wait_listening()

    def prometheus_and_alertmanager(self):
        am_port, prom_port = free_port(), free_port()
        with open(os.path.join(self.tmp, "alertmanager.yml"), "w") as f:
            yaml.safe_dump({
                "route": {"receiver": "webhook", "group_by": ["..."],
                          "group_wait": self.args.group_wait, "group_interval": "1m",
                          "repeat_interval": "4h"},
                "receivers": [{"name": "webhook", "webhook_configs": [
                    {"url": f"http://127.0.0.1:{self.receiver.port}/", "send_resolved": True}]}]}, f)
        self.procs.append(Proc("alertmanager", [
            "prometheus-alertmanager", f"--config.file={self.tmp}/alertmanager.yml",
            f"--storage.path={self.tmp}/am", f"--web.listen-address=127.0.0.1:{am_port}",
            "--cluster.listen-address="], self.tmp))
        agents = [n.instance for n in self.nodes.values()]
        with open(os.path.join(self.tmp, "prometheus.yml"), "w") as f:
            yaml.safe_dump({
                "global": {"scrape_interval": "15s", "evaluation_interval": "15s"},
                "rule_files": [os.path.join(SOURCE, "deploy", "agent", "alerts.yaml"),
                               os.path.join(SOURCE, "deploy", "controller", "alerts.yaml")],
                "alerting": {"alertmanagers": [{"static_configs": [
                    {"targets": [f"127.0.0.1:{am_port}"]}]}]},
                "scrape_configs": [
                    # As the shipped scrape config labels them: each agent's series with its node.
                    {"job_name": "tocsin-agent", "honor_labels": True,
                     "static_configs": [{"targets": [n.instance], "labels": {"node": n.name}}
                                        for n in self.nodes.values()]},
                    {"job_name": "tocsin-controller",
                     "static_configs": [{"targets": [f"127.0.0.1:{self.controller_port}"]}]}]}, f)
        self.procs.append(Proc("prometheus", [
            "prometheus", f"--config.file={self.tmp}/prometheus.yml",
            f"--storage.tsdb.path={self.tmp}/prom", f"--web.listen-address=127.0.0.1:{prom_port}"],
            self.tmp))
        self.prom = f"http://127.0.0.1:{prom_port}"

        def all_up():
            try:
                targets = get_json(self.prom + "/api/v1/targets")["data"]["activeTargets"]
            except OSError:
                return False
            return len(targets) == len(agents) + 1 and all(t["health"] == "up" for t in targets)
        Cluster.wait_for(all_up, 90, "Prometheus scraping every agent and the controller", interval=1)

    def panel_queries(self):
        """(dashboard, panel, expr) of every panel target in deploy/base/dashboards (but Job
        fabric's), with the
        template variables as Grafana substitutes them for "All" and a 15 s scrape."""
        out = []
        folder = os.path.join(SOURCE, "deploy", "base", "dashboards")
        for name in sorted(os.listdir(folder)):
            if name == "tocsin-job-fabric.json":
                # Keyed by training jobs, which need the agent's attribution (issue 20 part 1,
                # pending): tests/integration/job_prometheus_test.py queries its panels.
                continue
            with open(os.path.join(folder, name)) as f:
                board = json.load(f)
            for panel in board.get("panels", []):
                for t in panel.get("targets", []):
                    expr = t.get("expr", "")
                    for var, value in (("$__rate_interval", "1m"), ("$cluster", ".*"),
                                       ("$job", "tocsin-.*"), ("$node", ".*")):
                        expr = expr.replace(var, value)
                    out.append((board["title"], panel["title"], expr))
        return out

    def queries_with_data(self, queries):
        """The queries of `queries` that return at least one series now."""
        ok = set()
        for q in queries:
            url = self.prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q[2]})
            body = get_json(url)
            if body.get("status") == "success" and body["data"]["result"]:
                ok.add(q)
        return ok

    def alerts_now(self):
        return [(a["labels"]["alertname"], a["labels"].get("instance") or a["labels"].get("subject"),
                 a["state"]) for a in get_json(self.prom + "/api/v1/alerts")["data"]["alerts"]]

    # --- injections -----------------------------------------------------------------------------
    def inject(self, row):
        n = self.nodes.get(row)
        if row == "plugin-crashloop":
            # The outage: the plugin that ran fine starts crash-looping on every fabric node.
            self.c.kubectl("patch", "daemonset", "-n", PLUGIN_NS, "rdma-shared-dp-ds",
                           "--type=json", "-p", json.dumps([
                               {"op": "replace", "path": "/spec/template/spec/containers/0/command",
                                "value": ["sh", "-c", "exit 1"]}]))
            return lambda ls: ls.get("subject") == f"{PLUGIN_NS}/rdma-shared-dp-ds"
        if row == "drift":
            # Staging attaches its jobs to a network production lacks: pods asking for it will
            # not start here.
            with open(self.baseline) as f:
                snap = json.load(f)
            snap.setdefault("items", []).append({
                "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": DRIFT_NETWORK, "namespace": "default"},
                "spec": {"config": json.dumps({"cniVersion": "0.3.1", "type": "macvlan",
                                               "master": "ib0", "mtu": 4092,
                                               "ipam": {"type": "whereabouts"}})}})
            write_atomic(self.baseline, json.dumps(snap))
            return lambda ls: ls.get("subject", "") == f"network {DRIFT_NETWORK}"
        if row == "canary-no-rdma":
            with open(self.overrides + ".new", "w") as f:
                json.dump({node: {"allocatable": {RESOURCE: "0"}} for node in GPU_NODES}, f)
            os.replace(self.overrides + ".new", self.overrides)
            return lambda ls: True
        condition = {"port-rate": None, "lustre-import": "SharedStorageDegraded",
                     "mount-missing": "SharedStorageDegraded",
                     "probe-slow": "SharedStorageDegraded"}.get(row)
        match = (lambda ls, i=n.instance, c=condition:
                 ls.get("instance") == i and (c is None or ls.get("condition") == c))
        if row == "link-errors":
            downed = n.port_file("mlx5_2", 1, os.path.join("counters", "symbol_error"))

            def errors():
                # A degrading cable: symbol errors rising on an ACTIVE port; bounded, and it
                # stops with the bench.
                start = time.monotonic()
                count = int(open(downed).read().strip() or 0)
                while not self.stop_writers.wait(2.0) and time.monotonic() - start < 1800:
                    count += 7
                    write_atomic(downed, f"{count}\n")
            threading.Thread(target=errors, daemon=True).start()
        elif row == "port-down":
            # As a real port does: the link goes, and link_downed counts it.
            downed = n.port_file("mlx5_0", 1, os.path.join("counters", "link_downed"))
            with open(downed) as f:
                count = int(f.read().strip() or 0)
            write_atomic(n.port_file("mlx5_0", 1, "state"), "1: DOWN\n")
            write_atomic(n.port_file("mlx5_0", 1, "phys_state"), "3: Disabled\n")
            write_atomic(downed, f"{count + 1}\n")
        elif row == "port-rate":
            write_atomic(n.port_file("mlx5_1", 1, "rate"), "200 Gb/sec (2X NDR)\n")
        elif row == "sockets-nccl-log":
            d = os.path.join(n.root, "var", "log", "pods",
                             "team_llama-worker-0_0f8a3c52-95e4-4c1e-9c1b-6a2f1f0c7d11", "pytorch")
            os.makedirs(d)
            with open(os.path.join(SOURCE, "src", "nccl", "testdata", "socket-2.12.log")) as f:
                lines = f.read().splitlines()
            write_atomic(os.path.join(d, "0.log"), "".join(
                f"2026-12-01T00:00:00.000000000Z stdout F {line}\n" for line in lines))
        elif row == "sockets-counters":
            stats = os.path.join(n.root, "sys", "class", "net", "eno1", "statistics")

            def writer():
                # 400 MB/s each way on eno1 while the RDMA counters stay flat; bounded, and it
                # stops with the bench.
                base = {k: int(open(os.path.join(stats, k)).read()) for k in ("rx_bytes", "tx_bytes")}
                start = time.monotonic()
                while not self.stop_writers.wait(1.0) and time.monotonic() - start < 1800:
                    add = int((time.monotonic() - start) * 400e6)
                    for k, v in base.items():
                        write_atomic(os.path.join(stats, k), f"{v + add}\n")
            threading.Thread(target=writer, daemon=True).start()
        elif row == "lustre-import":
            osc = os.path.join(n.root, "sys", "kernel", "debug", "lustre", "osc",
                               "testfs-OST0000-osc-ffff8c5a4b6e9000")
            with open(os.path.join(osc, "import")) as f:
                text = f.read()
            if "state: FULL" not in text:
                raise AssertionError(f"{osc}/import is not FULL in the fixture")
            write_atomic(os.path.join(osc, "import"), text.replace("state: FULL", "state: DISCONN"))
            with open(os.path.join(osc, "state")) as f:
                text = f.read()
            write_atomic(os.path.join(osc, "state"),
                         text.replace("current_state: FULL", "current_state: DISCONN"))
        elif row == "mount-missing":
            mi = os.path.join(n.root, "proc", "4242", "mountinfo")
            with open(mi) as f:
                kept = [line for line in f if " - lustre " not in line]
            write_atomic(mi, "".join(kept))
        elif row == "probe-slow":
            backing = os.path.join(self.tmp, "probe-backing")
            os.makedirs(backing)
            subprocess.Popen([self.args.slowfs, n.probe, "-f", "-o",
                              f"backing={backing},latency_us=300000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.mounts.append(n.probe)
            Cluster.wait_for(lambda: os.path.ismount(n.probe), 10, "the slow mount")
        return match

    # --- tear-down ------------------------------------------------------------------------------
    def close(self):
        self.stop_writers.set()
        for p in reversed(self.procs):
            p.stop()
        for m in self.mounts:
            subprocess.run(["fusermount3", "-u", "-z", m], capture_output=True)
        for n in self.nodes.values():
            shutil.rmtree(n.probe, ignore_errors=True)
        if os.path.exists(self.overrides):
            os.unlink(self.overrides)

            # The test kubelet reports the nodes' own allocatable again at its next status
            # update: the tests after this one see the cluster as it was (bounded wait).
            def restored():
                return all(self.c.get("node", node)["status"].get("allocatable", {})
                           .get(RESOURCE, "0") != "0" for node in GPU_NODES)
            try:
                Cluster.wait_for(restored, 60, "the GPU nodes' RDMA allocatable restored",
                                 interval=1)
            except AssertionError as e:
                print(f"time_to_detect: {e}", file=sys.stderr)
        self.c.kubectl("delete", "namespace", PLUGIN_NS, "--wait=false", "--ignore-not-found",
                       check=False)
        self.c.kubectl("delete", "configmap", "-n", CANARY_NS, "tocsin-canary", "--ignore-not-found",
                       check=False)
        self.receiver.stop()


ROWS = [  # row, expected alert, goal (s), what was injected
    ("plugin-crashloop", "TocsinDevicePluginNotReady", 120,
     "the RDMA device-plugin DaemonSet crash-loops on every fabric node"),
    ("sockets-nccl-log", "TocsinNcclOverSockets", 120,
     "a pod's NCCL log: NET/Socket beside ACTIVE RDMA ports"),
    ("sockets-counters", "TocsinSilentTCPFallback", 120,
     "Ethernet at 400 MB/s each way while the RDMA ports stay idle"),
    ("port-down", "TocsinRDMAPortDown", 60, "an RDMA port goes DOWN"),
    ("port-rate", "TocsinRDMAPortDegraded", 60, "an RDMA port trains at half its lanes (2X)"),
    ("link-errors", "TocsinRDMALinkErrors", 120, "symbol errors rising on an ACTIVE port"),
    ("lustre-import", "TocsinNodeConditionTrue", 120, "a Lustre OST import goes DISCONN"),
    ("mount-missing", "TocsinNodeConditionTrue", 120, "the Lustre mount is gone"),
    ("probe-slow", "TocsinNodeConditionTrue", 120, "the probed shared folder answers in 300 ms"),
    ("canary-no-rdma", "TocsinCanaryFailing", 120,
     "no node advertises the canaries' RDMA resource"),
    ("drift", "TocsinFabricDrift", 120,
     "the baseline (staging) holds a network attachment this cluster lacks"),
]
SHORT = ("plugin-crashloop", "sockets-nccl-log", "port-down", "link-errors", "canary-no-rdma",
         "drift")

# Panels that list problems, so are empty on a healthy stack, with the rows whose failure fills
# them. Such a panel must have data when one of its rows ran; every other panel always must
# (the short run and a skipped row included): a query that returns nothing is a broken panel.
PANEL_ROWS = {
    ("tocsin / Canaries", "Failing canaries"): {"canary-no-rdma"},
    ("tocsin / Drift", "Differences from the baseline"): {"drift"},
    ("tocsin / Drift", "Drift findings by check"): {"drift"},
    ("tocsin / Fleet fabric", "NodeConditions"): {"port-down", "lustre-import", "mount-missing",
                                                  "probe-slow"},
    ("tocsin / Fleet fabric", "Link error counters"): {"link-errors"},
}


def panels_failed(queries, with_data, ran):
    """The panel queries without data that should have had it, given the rows that ran; and the
    PANEL_ROWS keys that name no panel (a renamed panel must not silently lose its check)."""
    known = {(board, panel) for board, panel, _ in queries}
    stale = sorted(f"{b} / {p}" for b, p in PANEL_ROWS if (b, p) not in known)
    failed = [f"{board} / {panel}: {expr}" for board, panel, expr in queries
              if (board, panel, expr) not in with_data
              and (((board, panel) not in PANEL_ROWS) or PANEL_ROWS[(board, panel)] & ran)]
    return failed, stale


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    release = os.path.join(SOURCE, "build", "release", "tocsin")
    a.add_argument("--tocsin", default=release if os.path.exists(release)
                   else os.path.join(SOURCE, "build", "test", "tocsin"))
    a.add_argument("--slowfs", default=os.path.join(SOURCE, "build", "test", "tests", "integration",
                                                    "slowfs"))
    a.add_argument("--fixture", default=os.path.join(SOURCE, "testdata", "nodes", "ib-healthy"))
    a.add_argument("--quiet", type=float, default=900, help="seconds of the healthy run")
    a.add_argument("--short", action="store_true", help="the test suite's quick version")
    a.add_argument("--group-wait", default="10s", help="Alertmanager's group_wait")
    a.add_argument("--canary-interval", default="30s")
    a.add_argument("--canary-pending-deadline", default="2m",
                   help="the controller's default; --short: 30s")
    a.add_argument("--drift-interval", default="30s",
                   help="the controller's --drift-interval (default 5m): a row measures detection "
                        "and delivery, not the wait for the next run")
    a.add_argument("--deadline", type=float, default=420, help="longest wait for one alert")
    a.add_argument("--json", help="write the results here too")
    args = a.parse_args()
    if args.short:
        args.quiet = min(args.quiet, 45)
        # A canary Pending this long is canary.unschedulable: shorter than the default so that
        # the short run stays short; the full run measures the default.
        args.canary_pending_deadline = "30s"
    env, why = load_env()
    if env is None:
        print(f"time_to_detect: skipped: {why}", file=sys.stderr)
        return 77
    rows = [r for r in ROWS if not args.short or r[0] in SHORT]
    skipped = {}
    if "probe-slow" in [r[0] for r in rows]:
        if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or not os.path.exists(args.slowfs):
            skipped["probe-slow"] = "needs root, /dev/fuse and slowfs (make test-build)"
    if "canary-no-rdma" in [r[0] for r in rows] and os.geteuid() != 0:
        skipped["canary-no-rdma"] = "not root: the test kubelet cannot run canary pods"
    rows = [r for r in rows if r[0] not in skipped]
    tmp = tempfile.mkdtemp(prefix="tocsin-ttd-")
    c = Cluster(env)
    stack = Stack(args, c, tmp)
    out = {"quiet_seconds": args.quiet, "group_wait": args.group_wait,
           "canary_interval": args.canary_interval, "drift_interval": args.drift_interval,
           "rows": [], "skipped": skipped}
    try:
        stack.device_plugin()
        stack.agents([r[0] for r in rows
                      if r[0] not in ("plugin-crashloop", "canary-no-rdma", "drift")] + ["healthy"])
        stack.drift_baseline()
        stack.controller()
        stack.prometheus_and_alertmanager()
        # Quiet: from the first scrape on, every notification is a false alarm.
        t_quiet = time.monotonic()
        seen_pending = set()
        while time.monotonic() - t_quiet < args.quiet:
            for al in stack.alerts_now():
                seen_pending.add(al)
            time.sleep(5)
        out["quiet_notifications"] = [ls for _, ls in stack.receiver.firing()]
        # Every dashboard panel's query, against this Prometheus: healthy now, faulty below (a
        # panel that lists problems is empty while there are none).
        queries = stack.panel_queries()
        with_data = stack.queries_with_data(queries)
        out["quiet_alerts_pending_or_firing"] = sorted(list(x) for x in seen_pending)
        # Every failure at once, each on its own node or object.
        t_inject = {}
        matchers = {}
        for row, alert, _, _ in rows:
            matchers[row] = stack.inject(row)
            t_inject[row] = time.monotonic()
        pending = {r[0] for r in rows}
        results = {}
        deadline = time.monotonic() + args.deadline
        while pending and time.monotonic() < deadline:
            for row, alert, _, _ in rows:
                if row not in pending:
                    continue
                for t, ls in stack.receiver.firing(t_inject[row]):
                    if ls.get("alertname") == alert and matchers[row](ls):
                        results[row] = (round(t - t_inject[row], 1), ls)
                        pending.discard(row)
                        break
            time.sleep(0.5)
        with_data |= stack.queries_with_data(queries)
        failed, stale = panels_failed(queries, with_data, {r[0] for r in rows})
        out["panels"] = {"queries": len(queries), "without_data": [
            f"{board} / {panel}: {expr}" for board, panel, expr in queries
            if (board, panel, expr) not in with_data], "failed": failed, "stale_rules": stale}
        for row, alert, goal, what in rows:
            secs, labels = results.get(row, (None, {}))
            # The suite's short run shares the machine with the other tests: it proves that each
            # failure reaches a notification in bounded time (twice the goal); the goal itself is
            # the full run's to judge, on a quiet machine.
            bound = goal * (2 if args.short else 1)
            out["rows"].append({"row": row, "injected": what, "alert": alert, "seconds": secs,
                                "goal_seconds": goal, "ok": secs is not None and secs <= goal,
                                "within_bound": secs is not None and secs <= bound,
                                "labels": labels})
    except (AssertionError, OSError) as e:
        print(f"time_to_detect: the stack could not be set up: {e}", file=sys.stderr)
        for p in stack.procs:
            print(f"--- {p.name}\n{p.log()[-1500:]}", file=sys.stderr)
        return 2
    finally:
        stack.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"quiet: {len(out['quiet_notifications'])} notifications in {args.quiet:.0f} s of a "
          f"healthy stack (group_wait {args.group_wait})")
    for ls in out["quiet_notifications"]:
        print(f"  false alarm: {ls.get('alertname')} {ls.get('instance') or ls.get('subject')}")
    print(f"{'row':18} {'alert':28} {'seconds':>8} {'goal':>5}  result")
    for r in out["rows"]:
        s = "-" if r["seconds"] is None else f"{r['seconds']:.1f}"
        print(f"{r['row']:18} {r['alert']:28} {s:>8} {r['goal_seconds']:>5}  "
              f"{'ok' if r['ok'] else 'late (within twice the goal)' if r['within_bound'] else 'MISSED'}")
    for row, why in skipped.items():
        print(f"{row:18} skipped: {why}")
    panels = out.get("panels", {})
    empty, failed = panels.get("without_data", []), panels.get("failed", [])
    print(f"dashboards: {panels.get('queries', 0)} panel queries, {len(empty)} without data, "
          f"{len(failed)} of them should have had data")
    for q in empty:
        print(f"  {'NO DATA' if q in failed else 'no data (its failure not injected)'}: {q}")
    for k in panels.get("stale_rules", []):
        print(f"  PANEL_ROWS names no panel: {k}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    ok = not out["quiet_notifications"] and all(r["within_bound"] for r in out["rows"]) and \
        not failed and not panels.get("stale_rules")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
