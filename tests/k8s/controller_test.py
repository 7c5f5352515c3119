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
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import ApiError, ClusterTestCase  # noqa: E402
from controller_process import ControllerProcess  # noqa: E402

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

        # The leader stops: it exits within a second and releases the Lease; ctl-b takes over.
        took = a.stop()
        self.assertLess(took, 2.0, a.log())
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
