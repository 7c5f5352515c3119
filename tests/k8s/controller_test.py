#!/usr/bin/env python3
"""`tocsin controller` against the real Kubernetes 1.20.2 control plane (tools/k8s/up.sh).

One scenario, in order, as an operator would live it: a device-plugin DaemonSet crash-loops on every
fabric node; the controller's /metrics shows daemonset.not-ready with the onset the objects show and
the leader posts one Warning Event; a second replica joins and follows; the leader is stopped with
SIGTERM (it exits within a second and releases the Lease); the follower takes over without posting the
Event again and with the same onset; the DaemonSet is fixed and the finding clears with one Normal
Event. The controller runs with the ServiceAccount token of deploy/controller's RBAC when RbacTest
(real_cluster_test.py) has applied it, else with the admin kubeconfig.

Run by `make test`; by hand: make k8s-up && TOCSIN_K8S_ENV=build/k8s/env python3 tests/k8s/controller_test.py
"""
import calendar
import json
import os
import ssl
import urllib.request
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import ApiError, ClusterTestCase  # noqa: E402
from controller_process import ControllerProcess  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

PLUGIN_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"
LEASE = "tocsin-controller-test"


class ControllerScenarioTest(ClusterTestCase):
    def setUp(self):
        c = self.cluster
        self.tmp = tempfile.mkdtemp(prefix="tocsin-ctl-")
        self.ns = c.namespace("tocsin-ctl")
        self.lease_ns, self.lease_name = self.ns, LEASE
        self.kubeconfig = c.kubeconfig
        self.controllers = []
        # With deploy/controller's RBAC applied (real_cluster_test.py's RbacTest), run as its
        # ServiceAccount: the rights the Deployment has, checked by the real authorizer.
        try:
            c.api("GET", "/api/v1/namespaces/tocsin/serviceaccounts/tocsin-controller")
            token = c.service_account_token("tocsin", "tocsin-controller")
            self.kubeconfig = c.token_kubeconfig(os.path.join(self.tmp, "ctl.kubeconfig"), token)
            # Its Role grants the one Lease tocsin/tocsin-controller (RbacTest has removed the
            # Deployment that used it).
            self.lease_ns, self.lease_name = "tocsin", "tocsin-controller"
            self.as_service_account = True
        except ApiError:
            self.as_service_account = False
        try:
            c.api("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{self.lease_ns}/leases/"
                            f"{self.lease_name}")
        except ApiError:
            pass

    def tearDown(self):
        for ctl in self.controllers:
            ctl.stop()
        self.cluster.kubectl("delete", "namespace", self.ns, "--wait=false")

    def start(self, identity):
        ctl = ControllerProcess(self.kubeconfig, "--leader-elect", "--lease-name", self.lease_name,
                                "--lease-namespace", self.lease_ns, "--identity", identity,
                                "--lease-duration", "4s", "--renew-deadline", "3s",
                                "--retry-period", "500ms", "--clear-after", "3s")
        self.controllers.append(ctl)
        return ctl

    def events(self, reason):
        items = self.cluster.get("events", "-n", self.ns)["items"]
        return [e for e in items if e["reason"] == reason
                and e["involvedObject"]["name"] == "rdma-shared-dp-ds"]

    def lease(self):
        return self.cluster.api(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{self.lease_ns}/leases/{self.lease_name}")

    def test_crashloop_page_failover_and_fix(self):
        c = self.cluster
        a = self.start("ctl-a")
        c.wait_for(lambda: a.get("/readyz")[0] == 200, 60, "ctl-a ready", interval=0.2)
        c.wait_for(lambda: a.value("tocsin_controller_leader") == 1, 30, "ctl-a leader")
        for resource in ("nodes", "pods", "daemonsets", "jobs"):
            self.assertEqual(a.value("tocsin_controller_watch_up", resource=resource), 1, resource)
        self.assertEqual(a.value("tocsin_controller_objects", resource="nodes"), 3)

        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
              "metadata": {"name": "rdma-shared-dp-ds", "namespace": self.ns},
              "spec": {"selector": {"matchLabels": {"name": "rdma-shared-dp-ds"}}, "template": {
                  "metadata": {"labels": {"name": "rdma-shared-dp-ds"}},
                  "spec": {"nodeSelector": {"network.nvidia.com/rdma": "true"},
                           "containers": [{"name": "k8s-rdma-shared-dp-ds", "image": PLUGIN_IMAGE,
                                           "command": ["sh", "-c", "echo 'no RDMA devices'; exit 1"]}]}}}}
        applied_at = time.monotonic()
        c.kubectl("apply", "-f", "-", stdin=json.dumps(ds))
        subject = f"{self.ns}/rdma-shared-dp-ds"

        def crashlooping():
            pods = c.get("pods", "-n", self.ns)["items"]
            return len(pods) == 2 and all(
                ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
                for p in pods for s in p["status"].get("containerStatuses") or [{}])
        c.wait_for(crashlooping, 90, "the plugin's 2 pods in CrashLoopBackOff")

        def finding():
            for (name, labels), v in a.metrics().items():
                ls = dict(labels)
                if name == "tocsin_finding" and ls.get("check") == "daemonset.not-ready" and \
                        ls.get("subject") == subject and ls.get("severity") in ("error", "critical"):
                    return ls
            return None
        # Found before the pods even reach CrashLoopBackOff (never ready is enough); bounded by
        # 15 s from then all the same.
        c.wait_for(finding, 15, "daemonset.not-ready on /metrics within 15 s", interval=0.1)
        detect_s = time.monotonic() - applied_at
        since = a.value("tocsin_finding_since_timestamp_seconds", check="daemonset.not-ready",
                        subject=subject)
        created = c.get("daemonset", "-n", self.ns, "rdma-shared-dp-ds")["metadata"]["creationTimestamp"]
        created_s = calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))
        self.assertGreaterEqual(since, created_s - 1)  # the onset the objects show, not "now"
        self.assertLessEqual(since, time.time())
        self.assertEqual(a.value("tocsin_check_status", check="daemonset.not-ready"), 0)
        warnings = c.wait_for(lambda: self.events("TocsinFinding"), 15, "the Warning Event")
        self.assertEqual(len(warnings), 1, json.dumps(warnings, indent=1))
        warning = warnings[0]
        self.assertEqual(warning["type"], "Warning")
        self.assertEqual(warning["involvedObject"]["kind"], "DaemonSet")
        self.assertTrue(warning["involvedObject"].get("uid"))
        self.assertIn("daemonset.not-ready", warning["message"])
        print(f"from the DaemonSet's creation to its finding on /metrics: {detect_s:.2f} s",
              file=sys.stderr)

        # A second replica follows: it serves the same finding and onset, and is not the leader.
        b = self.start("ctl-b")
        c.wait_for(lambda: b.get("/readyz")[0] == 200, 60, "ctl-b ready", interval=0.2)
        c.wait_for(lambda: b.value("tocsin_finding_since_timestamp_seconds",
                                   check="daemonset.not-ready", subject=subject) == since,
                   15, "ctl-b to show the leader's onset")
        self.assertEqual(b.value("tocsin_controller_leader"), 0)
        print("as the ServiceAccount of deploy/controller" if self.as_service_account
              else "as the admin (deploy/controller's RBAC not applied)", file=sys.stderr)
        self.assertEqual(a.value("tocsin_controller_leader"), 1)
        self.assertTrue(self.lease()["spec"]["holderIdentity"] == "ctl-a")
        saved = json.loads(self.lease()["metadata"]["annotations"]["tocsin.io/findings"])
        self.assertIn(subject, [f["subject"] for f in saved["findings"]])

        # The leader stops (within stop()'s 10 s bound) and releases the Lease on its way out:
        # right after, the Lease is free or already ctl-b's, never still ctl-a's until it expires.
        # How long the stop takes is a figure, not a test: printed.
        took = a.stop()
        print(f"the leader stopped {took:.2f} s after SIGTERM", file=sys.stderr)
        self.assertIn(self.lease()["spec"].get("holderIdentity", ""), ("", "ctl-b"), a.log())
        c.wait_for(lambda: b.value("tocsin_controller_leader") == 1, 15, "ctl-b to lead")
        self.assertEqual(self.lease()["spec"]["holderIdentity"], "ctl-b")
        evals = b.value("tocsin_controller_evaluations_total")
        c.wait_for(lambda: b.value("tocsin_controller_evaluations_total") > evals, 15,
                   "ctl-b to evaluate as leader")
        self.assertEqual(len(self.events("TocsinFinding")), 1, "no duplicate Event on failover")
        self.assertEqual(b.value("tocsin_finding_since_timestamp_seconds",
                                 check="daemonset.not-ready", subject=subject), since)

        # The fix: the plugin stays up; the finding clears and one Normal Event says so.
        c.kubectl("patch", "daemonset", "-n", self.ns, "rdma-shared-dp-ds", "--type=json", "-p",
                  json.dumps([{"op": "replace",
                               "path": "/spec/template/spec/containers/0/command",
                               "value": ["sh", "-c", "sleep 3600"]}]))

        def cleared():
            return all(not (n == "tocsin_finding" and dict(ls).get("subject") == subject)
                       for (n, ls) in b.metrics())
        c.wait_for(cleared, 120, "daemonset.not-ready to clear after the fix", interval=0.2)
        [normal] = c.wait_for(lambda: self.events("TocsinFindingCleared"), 15, "the Normal Event")
        self.assertEqual(normal["type"], "Normal")
        self.assertEqual(len(self.events("TocsinFinding")), 1)
        self.assertGreaterEqual(b.value("tocsin_controller_api_requests_total", verb="list",
                                        code="200") or 0, 4)  # one list per resource
        b.stop()


class WatchFaultsOnTheRealApiServerTest(ClusterTestCase):
    """The connections to the real API server are cut (a TCP proxy in between): every watch is
    dropped and resumed from the last version seen. Meanwhile etcd is compacted past the jobs
    watch's version (up.sh serves jobs without the watch cache, straight from etcd), so that
    watch's resume gets the real 410 Expired and is followed by a relist."""

    def etcd(self, path, body):
        env = self.cluster.env
        pki = os.path.join(env["K8S_STATE"], "pki")
        ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        ctx.load_cert_chain(os.path.join(pki, "apiserver-etcd-client.crt"),
                            os.path.join(pki, "apiserver-etcd-client.key"))
        req = urllib.request.Request(f"https://127.0.0.1:{env['K8S_ETCD_PORT']}{path}",
                                     data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return json.loads(r.read())

    def test_dropped_watches_resume_and_a_compacted_one_relists(self):
        c = self.cluster
        if "K8S_ETCD_PORT" not in c.env:
            self.skipTest("the control plane was started by an older up.sh (no K8S_ETCD_PORT)")
        ns = c.namespace("tocsin-ctl-watch")
        proxy = TcpProxy("127.0.0.1", int(c.env["K8S_API_PORT"]))
        tmp = tempfile.mkdtemp(prefix="tocsin-ctl-proxy-")
        with open(c.kubeconfig) as f:
            text = f.read().replace(c.server, f"https://127.0.0.1:{proxy.port}")
        kc = os.path.join(tmp, "kubeconfig")
        with open(kc, "w") as f:
            f.write(text)
        ctl = ControllerProcess(kc)
        try:
            c.wait_for(lambda: ctl.get("/readyz")[0] == 200, 60, "ready", interval=0.2)
            job = {"apiVersion": "batch/v1", "kind": "Job",
                   "metadata": {"name": "before", "namespace": ns},
                   "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                       {"name": "c", "image": "busybox", "command": ["sleep", "600"]}]}}}}
            c.kubectl("apply", "-f", "-", stdin=json.dumps(job))
            c.wait_for(lambda: ctl.value("tocsin_controller_watch_events_total", resource="jobs")
                       >= 1, 30, "the Job through the jobs watch", interval=0.1)
            jobs_before = ctl.value("tocsin_controller_objects", resource="jobs")
            self.assertGreaterEqual(proxy.cut(), 4)  # every watch (and keep-alive) connection
            job["metadata"]["name"] = "during"
            c.kubectl("apply", "-f", "-", stdin=json.dumps(job))
            revision = int(self.etcd("/v3/kv/range", {"key": "Zm9v"})["header"]["revision"])
            self.etcd("/v3/kv/compaction", {"revision": revision, "physical": True})
            proxy.restore()
            c.wait_for(lambda: ctl.value("tocsin_controller_relists_total", resource="jobs") >= 1,
                       60, "the jobs informer to relist after the real 410", interval=0.2)
            c.wait_for(lambda: ctl.value("tocsin_controller_objects", resource="jobs")
                       == jobs_before + 1, 30, "the Job created while cut", interval=0.2)
            for resource in ("nodes", "pods", "daemonsets"):
                c.wait_for(lambda r=resource: ctl.value("tocsin_controller_watch_resumes_total",
                                                        resource=r) >= 1 and
                           ctl.value("tocsin_controller_watch_up", resource=r) == 1, 60,
                           f"{resource} watch resumed", interval=0.2)
                self.assertEqual(ctl.value("tocsin_controller_relists_total", resource=resource),
                                 0, f"{resource}: resumed from the watch cache, not relisted")
            self.assertIn("jobs: watching again", ctl.log())
        finally:
            ctl.stop()
            proxy.close()
            c.kubectl("delete", "namespace", ns, "--wait=false")


if __name__ == "__main__":
    unittest.main(verbosity=2)
