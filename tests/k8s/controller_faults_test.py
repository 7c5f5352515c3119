#!/usr/bin/env python3
"""`tocsin controller` against the Python test API server (tests/k8s_api), for the faults a real
control plane does not produce on demand: a watch dropped mid-stream (resumed from the last version
seen, no relist), 410 Expired (relisted), an API server that does not answer (checks unknown, never
"ok"), and what the idle controller costs the server. Also: /metrics passes `promtool check
metrics`, and SIGTERM stops it within a second.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster import SOURCE, Cluster, write_plain_kubeconfig  # noqa: E402
from controller_process import ControllerProcess  # noqa: E402

SNAPSHOT = os.path.join(SOURCE, "testdata", "clusters", "plugin-crashloop.json")
wait_for = Cluster.wait_for


class ApiServer:
    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(SOURCE, "tests", "k8s_api", "server.py"),
             "--snapshot", SNAPSHOT, "--max-seconds", "120", *args],
            stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline().split()[1])
        self.tmp = tempfile.mkdtemp(prefix="tocsin-ctl-faults-")
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        write_plain_kubeconfig(self.kubeconfig, f"http://127.0.0.1:{self.port}")

    def control(self, method, name, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/_control/{name}", data=data,
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def close(self):
        self.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


class ControllerFaultsTest(unittest.TestCase):
    def setUp(self):
        self.servers, self.controllers = [], []

    def tearDown(self):
        for c in self.controllers:
            c.stop()
        for s in self.servers:
            s.close()

    def start(self, *server_args):
        server = ApiServer(*server_args)
        self.servers.append(server)
        ctl = ControllerProcess(server.kubeconfig)
        self.controllers.append(ctl)
        wait_for(lambda: ctl.get("/readyz")[0] == 200, 30, "the controller ready", interval=0.1)
        return server, ctl

    def test_dropped_watch_resumes_from_the_last_version_without_a_relist(self):
        server, ctl = self.start()
        server.control("POST", "apply", node("extra-1"))
        wait_for(lambda: ctl.value("tocsin_controller_objects", resource="nodes") == 5, 10,
                 "the new node through the watch", interval=0.1)
        self.assertGreaterEqual(server.control("POST", "drop-watches")["dropped"], 4)
        wait_for(lambda: ctl.value("tocsin_controller_watch_resumes_total", resource="nodes") >= 1,
                 10, "the nodes watch resumed", interval=0.1)
        server.control("POST", "apply", node("extra-2"))  # seen by the resumed watch
        wait_for(lambda: ctl.value("tocsin_controller_objects", resource="nodes") == 6, 10,
                 "the second node through the resumed watch", interval=0.1)
        self.assertEqual(ctl.value("tocsin_controller_relists_total", resource="nodes"), 0)
        lists = server.control("GET", "requests")["byVerb"].get("list", 0)
        self.assertEqual(lists, 4, "one list per resource, none after the drop")

    def test_410_expired_relists(self):
        # Each informer's first watch (from its list's version) is told the version is gone.
        server, ctl = self.start("--watch-gone-first", "4")
        for resource in ("nodes", "pods", "daemonsets", "jobs"):
            wait_for(lambda r=resource: ctl.value("tocsin_controller_relists_total", resource=r) == 1,
                     15, f"{resource} relisted after 410", interval=0.1)
        self.assertEqual(ctl.value("tocsin_controller_objects", resource="nodes"), 4)
        server.control("POST", "apply", node("after-relist"))
        wait_for(lambda: ctl.value("tocsin_controller_objects", resource="nodes") == 5, 10,
                 "the watch after the relist", interval=0.1)

    def test_findings_metrics_are_valid_and_sigterm_is_prompt(self):
        _, ctl = self.start()
        wait_for(lambda: ctl.value("tocsin_finding", check="daemonset.not-ready",
                                   subject="kube-system/rdma-shared-dp-ds") == 1, 10,
                 "the crash-looping plugin's finding", interval=0.1)
        self.assertEqual(ctl.value("tocsin_check_status", check="daemonset.not-ready"), 0)
        self.assertEqual(ctl.value("tocsin_check_status", check="node.not-ready"), 1)
        self.assertEqual(ctl.value("tocsin_controller_leader"), 1)  # no --leader-elect
        _, text = ctl.get("/metrics")
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        took = ctl.stop()  # fails past 10 s; the figure is printed, not judged
        print(f"stopped {took:.2f} s after SIGTERM", file=sys.stderr)
        self.assertEqual(ctl.proc.returncode, 0)

    def test_sigterm_is_prompt_while_a_list_hangs(self):
        server = ApiServer("--hang", "pods", "--hang-seconds", "100")
        self.servers.append(server)
        # The list would hang for 100 s and the request is bounded at 60 s: a stop within
        # stop()'s 10 s (it fails the test beyond) is the stop flag aborting the request.
        ctl = ControllerProcess(server.kubeconfig, "--request-timeout", "60s")
        self.controllers.append(ctl)
        wait_for(lambda: server.control("GET", "requests")["byResource"].get("pods"), 10,
                 "the pods list to be hanging", interval=0.1)
        took = ctl.stop()
        print(f"stopped {took:.2f} s after SIGTERM with a list hanging", file=sys.stderr)

    def test_a_server_that_expires_every_watch_is_not_listed_in_a_loop(self):
        server, ctl = self.start("--watch-gone-first", "100000")
        server.control("POST", "reset-requests")
        start = time.monotonic()
        wait_for(lambda: time.monotonic() - start > 6, 10, "6 s", interval=0.5)
        lists = server.control("GET", "requests")["byVerb"].get("list", 0)
        self.assertLessEqual(lists, 4 * 5, "relists back off (0.8, 1.6, 3.2 s ...)")
        self.assertEqual(ctl.value("tocsin_check_status", check="daemonset.not-ready"), -1)

    def test_a_kind_the_checks_do_not_read_cannot_blind_them(self):
        # Jobs (and the training kinds) only name where Events go: their list refused must not
        # hold the evaluation or turn the node, pod and DaemonSet checks unknown.
        server, ctl = self.start("--forbid", "jobs")
        self.assertEqual(ctl.value("tocsin_check_status", check="daemonset.not-ready"), 0)
        self.assertEqual(ctl.value("tocsin_check_status", check="node.not-ready"), 1)
        self.assertEqual(ctl.value("tocsin_controller_watch_up", resource="jobs"), 0)
        self.assertEqual(ctl.value("tocsin_controller_synced"), 1)

    def test_unreachable_api_is_unknown_never_ok(self):
        server = ApiServer()
        self.servers.append(server)
        server.kill()  # nothing listens on its port now
        ctl = ControllerProcess(server.kubeconfig)
        self.controllers.append(ctl)
        wait_for(lambda: ctl.value("tocsin_check_status", check="daemonset.not-ready") == -1, 10,
                 "checks unknown", interval=0.1)
        self.assertEqual(ctl.get("/readyz")[0], 503)
        self.assertEqual(ctl.value("tocsin_controller_watch_up", resource="pods"), 0)
        self.assertEqual(ctl.value("tocsin_controller_synced"), 0)
        self.assertIsNone(ctl.value("tocsin_finding"))


class LeaderElectionTest(unittest.TestCase):
    """Two replicas on the test server's Leases (optimistic concurrency, 409 on a stale write)."""

    def setUp(self):
        self.server = ApiServer()
        self.controllers = []

    def tearDown(self):
        for c in self.controllers:
            c.stop()
        self.server.close()

    def replica(self, identity):
        ctl = ControllerProcess(self.server.kubeconfig, "--leader-elect", "--lease-namespace",
                                "tocsin", "--identity", identity, "--lease-duration", "3s",
                                "--renew-deadline", "2s", "--retry-period", "300ms")
        self.controllers.append(ctl)
        return ctl

    def leaders(self):
        return sorted(c.identity for c in self.controllers
                      if c.proc.poll() is None and c.value("tocsin_controller_leader") == 1)

    def test_one_leader_failover_on_a_crash_and_on_sigterm(self):
        a = self.replica("a")
        wait_for(lambda: self.leaders() == ["a"], 10, "a to lead", interval=0.1)
        b = self.replica("b")
        wait_for(lambda: b.get("/readyz")[0] == 200, 10, "b ready", interval=0.1)
        # b stays a follower while a renews: watched over several lease durations (an
        # observation, not a synchronisation).
        until = time.monotonic() + 7
        while time.monotonic() < until:
            self.assertEqual(self.leaders(), ["a"])
            time.sleep(0.25)
        # a crashes (no release): b waits out the lease duration it observed, then takes over.
        a.proc.kill()
        a.proc.wait()
        wait_for(lambda: self.leaders() == ["b"], 15, "b to lead after a crashed", interval=0.1)
        # a comes back and follows; b stops cleanly and releases: a takes over at once.
        a2 = self.replica("a2")
        wait_for(lambda: a2.get("/readyz")[0] == 200, 10, "a2 ready", interval=0.1)
        self.assertEqual(self.leaders(), ["b"])
        b.stop()
        wait_for(lambda: self.leaders() == ["a2"], 3, "a2 to lead within 3 s of b's SIGTERM",
                 interval=0.1)

    def test_a_new_lease_announces_what_is_already_broken(self):
        # The cluster has been broken for days before the controller is deployed: the first
        # leader posts a Warning for each finding that has an object.
        a = self.replica("a")
        wait_for(lambda: self.leaders() == ["a"], 10, "a to lead", interval=0.1)
        wait_for(lambda: a.value("tocsin_controller_events_total", type="Warning") >= 1, 10,
                 "the Warnings about what was broken before", interval=0.1)
        self.assertGreaterEqual(self.server.control("GET", "requests")["byResource"]
                                .get("events", {}).get("create", 0), 1)

    def test_a_hostile_lease_is_an_error_not_a_crash(self):
        self.server.control("POST", "apply", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "tocsin-controller", "namespace": "tocsin",
                         "annotations": {"tocsin.io/findings": '{"version":"1","findings":[]}'}},
            "spec": {"holderIdentity": None, "leaseDurationSeconds": "15"}})
        a = self.replica("a")
        wait_for(lambda: self.leaders() == ["a"], 10, "a to lead over the malformed Lease",
                 interval=0.1)
        wait_for(lambda: "cannot be read" in a.log(), 10, "the saved state refused, logged",
                 interval=0.1)
        self.assertIsNone(a.proc.poll())

    def test_a_leader_that_cannot_renew_stops_leading_within_its_renew_deadline(self):
        a = self.replica("a")
        wait_for(lambda: self.leaders() == ["a"], 10, "a to lead", interval=0.1)
        self.server.control("POST", "fail", {"status": 503, "count": 100000})
        wait_for(lambda: a.value("tocsin_controller_leader") == 0, 4,
                 "a to give up within its renew deadline (2 s) and a retry", interval=0.1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
