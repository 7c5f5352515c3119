#!/usr/bin/env python3
"""Drift on the real control plane: two namespaces stand in for staging and production.

Each holds an RDMA shared device plugin DaemonSet and the ConfigMap it mounts, a
NetworkAttachmentDefinition (its CRD installed here, as Multus does) and a Job template; production
differs in four seeded ways: the RDMA resource name, the plugin's image version, the network's MTU
and the template's NCCL_IB_HCA. `tocsin diff ctx: ctx: --namespace-a --namespace-b` finds exactly
those; `tocsin controller --drift-baseline` (a `tocsin snapshot` of staging) watching production
exports drift.rdma.resource on /metrics, and drops it when production is fixed; with
`--drift-context` the baseline is a cluster listed at every run (unreachable: said, never "ok");
as deploy/controller's ServiceAccount without the opt-in drift-rbac.yaml it still runs and says
what it cannot read.

    TOCSIN_K8S_ENV=build/k8s/env python3 tests/k8s/drift_test.py -v
"""
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import SOURCE, ClusterTestCase, run_tocsin  # noqa: E402
from controller_process import ControllerProcess  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

STAGING, PROD = "tocsin-drift-staging", "tocsin-drift-prod"
# Both "sides" are one cluster's namespaces, so they share its nodes; each node is its own class,
# so that nodes other tests left different (the agent DaemonSet's tocsin.io/fabric annotations on
# some nodes of a class) are no class.mixed here.
HOST = "kubernetes.io/hostname"
NAD_CRD = "network-attachment-definitions.k8s.cni.cncf.io"
PLUGIN = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin"


def plugin_config(resource):
    return json.dumps({"configList": [{"resourceName": resource, "rdmaHcaMax": 63,
                                       "selectors": {"vendors": ["15b3"]}}]})


def objects(ns, resource, version, mtu, hca):
    """One side's fabric configuration. Nothing runs: no node has the plugin's label, and the
    Job's pods wait for a node that does not exist (1.20 has no suspended Jobs)."""
    nowhere = {"tocsin.io/drift-test": "no-such-node"}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "rdma-devices", "namespace": ns},
         "data": {"config.json": plugin_config(resource)}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": {"name": "rdma-shared-dp-ds", "namespace": ns},
         "spec": {"selector": {"matchLabels": {"name": "rdma-shared-dp-ds"}}, "template": {
             "metadata": {"labels": {"name": "rdma-shared-dp-ds"}},
             "spec": {"nodeSelector": nowhere,
                      "containers": [{"name": "plugin", "image": f"{PLUGIN}:{version}",
                                      "volumeMounts": [{"name": "config",
                                                        "mountPath": "/k8s-rdma-shared-dev-plugin"}]}],
                      "volumes": [{"name": "config", "configMap": {"name": "rdma-devices"}}]}}}},
        {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
         "metadata": {"name": "rdma-net", "namespace": ns,
                      "annotations": {"k8s.v1.cni.cncf.io/resourceName": "rdma/" + resource}},
         "spec": {"config": json.dumps({"cniVersion": "0.3.1", "name": "rdma-net",
                                        "type": "macvlan", "master": "ens1f0", "mtu": mtu,
                                        "ipam": {"type": "whereabouts",
                                                 "range": "192.168.2.0/24"}})}},
        {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": "llm-pretrain", "namespace": ns},
         "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
             "restartPolicy": "Never", "nodeSelector": nowhere,
             "containers": [{"name": "trainer", "image": "busybox",
                             "command": ["sh", "-c", "true"],
                             "env": [{"name": "NCCL_IB_HCA", "value": hca},
                                     {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}],
                             "resources": {"limits": {"rdma/" + resource: "1"}}}]}}}},
    ]


# What production differs in, as (check, subject): the resource name shows in the pool and the
# job template's request; nothing about nodes (the same nodes on both sides).
SEEDED = {
    ("drift.rdma.resource", "pool rdma/hca_staging"),
    ("drift.rdma.resource", "pool rdma/hca_prod"),
    ("drift.plugin.image", "device plugin k8s-rdma-shared-dev-plugin"),
    ("drift.network.attachment", "network rdma-net: mtu"),
    ("drift.network.attachment", "network rdma-net: resource"),
    ("drift.template.nccl", "template Job/llm-pretrain: NCCL_IB_HCA"),
    ("drift.template.resources", "template Job/llm-pretrain: limits rdma/hca_staging"),
    ("drift.template.resources", "template Job/llm-pretrain: limits rdma/hca_prod"),
}


class DriftTest(ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        cls.tmp = tempfile.mkdtemp(prefix="tocsin-drift-")
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": NAD_CRD},
               "spec": {"group": "k8s.cni.cncf.io", "scope": "Namespaced",
                        "names": {"plural": "network-attachment-definitions",
                                  "singular": "network-attachment-definition",
                                  "kind": "NetworkAttachmentDefinition", "shortNames": ["net-attach-def"]},
                        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                            "openAPIV3Schema": {"type": "object",
                                                "x-kubernetes-preserve-unknown-fields": True}}}]}}
        c.kubectl("apply", "-f", "-", stdin=json.dumps(crd))
        c.wait_for(lambda: c.status_of("GET", "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions") == 200,
                   60, "the NetworkAttachmentDefinition CRD to be served")
        for ns, args in ((STAGING, ("hca_staging", "v1.5.1", 9000, "mlx5_0")),
                         (PROD, ("hca_prod", "v1.5.2", 4000, "mlx5_1"))):
            c.namespace(ns)
            c.kubectl("apply", "-f", "-",
                      stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects(ns, *args)}))
        cls.baseline = os.path.join(cls.tmp, "staging.json")
        r = run_tocsin("snapshot", "--kubeconfig", c.kubeconfig, "--no-pods", "--out", cls.baseline)
        if r.returncode != 0:
            raise AssertionError("tocsin snapshot: " + r.stderr)

    @classmethod
    def tearDownClass(cls):
        if cls.cluster is not None:
            c = cls.cluster
            for ns in (STAGING, PROD):
                c.kubectl("delete", "namespace", ns, "--wait=false", check=False)
            c.kubectl("delete", "crd", NAD_CRD, "--wait=false", check=False)
            c.kubectl("delete", "-f", os.path.join(SOURCE, "deploy", "components", "drift", "drift-rbac.yaml"),
                      "--ignore-not-found", check=False)
            c.kubectl("delete", "-f", os.path.join(SOURCE, "deploy", "rbac", "audit.yaml"),
                      "--ignore-not-found", check=False)
        shutil.rmtree(getattr(cls, "tmp", ""), ignore_errors=True)

    def diff(self, *extra):
        r = run_tocsin("diff", "--kubeconfig", self.cluster.kubeconfig, "ctx:", "ctx:",
                       "--class-label", HOST,
                       "--namespace-a", STAGING, "--namespace-b", PROD, "-o", "json", *extra)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        return r.returncode, json.loads(r.stdout)

    def test_diff_live_finds_exactly_the_seeded_differences(self):
        rc, report = self.diff()
        got = {(f["check"], f["subject"]) for f in report["findings"]}
        self.assertEqual(got, SEEDED, json.dumps(report["findings"], indent=1))
        self.assertEqual(rc, 1)  # errors: the resource name, the network
        rdma = [f for f in report["findings"] if f["check"] == "drift.rdma.resource"]
        self.assertTrue(all(f["severity"] == "error" for f in rdma))
        for f in report["findings"]:
            self.assertIn(STAGING, f["evidence"].get("side_a", f["evidence"].get("side", "")) +
                          f["evidence"].get("side_b", ""))
        # The same namespace on both sides: nothing differs.
        r = run_tocsin("diff", "--kubeconfig", self.cluster.kubeconfig, "ctx:", "ctx:",
                       "--class-label", HOST,
                       "--namespace-a", PROD, "--namespace-b", PROD, "-o", "json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(json.loads(r.stdout)["findings"], [])

    def test_the_tocsin_diff_role_alone_reads_what_diff_and_snapshot_need_and_no_more(self):
        """deploy/rbac/audit.yaml's tocsin-diff ClusterRole, bound to its ServiceAccount alone:
        `tocsin snapshot --no-pods` and `tocsin diff ctx:...` work as under the admin (the README's
        commands for that role), and neither pods nor any write are allowed."""
        c = self.cluster
        c.kubectl("create", "namespace", "tocsin", check=False)
        c.kubectl("apply", "-f", os.path.join(SOURCE, "deploy", "rbac", "audit.yaml"))
        token = c.service_account_token("tocsin", "tocsin-diff")
        kubeconfig = c.token_kubeconfig(os.path.join(self.tmp, "tocsin-diff.kubeconfig"), token)
        # Only the role: the ServiceAccount is bound to nothing else.
        bindings = c.get("clusterrolebindings")["items"] + c.get("rolebindings", "-A")["items"]
        bound = {b["roleRef"]["name"] for b in bindings
                 if any(s.get("kind") == "ServiceAccount" and s.get("name") == "tocsin-diff"
                        and s.get("namespace") == "tocsin" for s in b.get("subjects") or [])}
        self.assertEqual(bound, {"tocsin-diff"})

        out = os.path.join(self.tmp, "sa-snapshot.json")
        r = run_tocsin("snapshot", "--kubeconfig", kubeconfig, "--no-pods", "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            kinds = {item.get("kind") for item in json.load(f)["items"]}
        self.assertLessEqual({"Node", "DaemonSet", "ConfigMap", "NetworkAttachmentDefinition", "Job"},
                             kinds)
        # The same snapshot as the admin's, kind for kind (nothing it may not read is missing).
        with open(self.baseline) as f:
            self.assertEqual(kinds, {item.get("kind") for item in json.load(f)["items"]})
        # Without --no-pods: pods are not in the role, and it says so (exit 2, not a partial file).
        r = run_tocsin("snapshot", "--kubeconfig", kubeconfig, "--out", os.path.join(self.tmp, "p.json"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("pods", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "p.json")))

        r = run_tocsin("diff", "--kubeconfig", kubeconfig, "ctx:", "ctx:", "--class-label", HOST,
                       "--namespace-a", STAGING, "--namespace-b", PROD, "-o", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        got = {(f["check"], f["subject"]) for f in json.loads(r.stdout)["findings"]}
        self.assertEqual(got, SEEDED)
        # The snapshot the role wrote diffs like the live side.
        r = run_tocsin("diff", out, "ctx:", "--kubeconfig", kubeconfig, "--class-label", HOST,
                       "--namespace-a", STAGING, "--namespace-b", PROD, "-o", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual({(f["check"], f["subject"]) for f in json.loads(r.stdout)["findings"]}, SEEDED)

        # Read-only: every write is forbidden.
        for write in (("create", "configmap", "tocsin-diff-write", "-n", STAGING),
                      ("label", "node", "--all", "tocsin-diff-write=1"),
                      ("delete", "daemonsets", "--all", "-n", STAGING)):
            r = c.kubectl(*write, kubeconfig=kubeconfig, check=False)
            self.assertNotEqual(r.returncode, 0, write)
            self.assertIn("forbidden", r.stderr.lower(), write)
        for verb, what in (("get", "pods"), ("list", "secrets"), ("watch", "nodes"),
                           ("create", "configmaps"), ("patch", "nodes")):
            r = c.kubectl("auth", "can-i", verb, what, "-A", kubeconfig=kubeconfig, check=False)
            self.assertEqual(r.stdout.strip(), "no", (verb, what))

    def drift_findings(self, ctl):
        return {(dict(ls)["check"], dict(ls)["subject"]): dict(ls)["severity"]
                for (name, ls), v in ctl.metrics().items()
                if name == "tocsin_finding" and dict(ls)["check"].startswith("drift.")}

    def controller(self, kubeconfig, *extra):
        ctl = ControllerProcess(kubeconfig, "--no-events", "--drift-baseline", self.baseline,
                                "--drift-baseline-namespace", STAGING, "--drift-namespace", PROD,
                                "--drift-interval", "1s", "--drift-class-label", HOST, *extra)
        self.addCleanup(ctl.stop)
        return ctl

    def test_controller_exports_drift_and_clears_it_when_fixed(self):
        c = self.cluster
        ctl = self.controller(c.kubeconfig)
        want = ("drift.rdma.resource", "pool rdma/hca_prod")
        found = c.wait_for(lambda: want in self.drift_findings(ctl) and self.drift_findings(ctl),
                           60, "drift.rdma.resource on the controller's /metrics")
        self.assertEqual(set(found), SEEDED)
        self.assertEqual(found[want], "error")
        self.assertIsNotNone(ctl.value("tocsin_finding_since_timestamp_seconds",
                                       check="drift.rdma.resource", subject="pool rdma/hca_prod"))
        self.assertEqual(ctl.value("tocsin_check_status", check="drift.rdma.resource"), 0)
        self.assertEqual(ctl.value("tocsin_check_status", check="drift.node.firmware"), 1)
        self.assertEqual(ctl.value("tocsin_controller_drift_baseline_up"), 1)
        # Production fixed: the ConfigMap names staging's resource again (the ConfigMap is read
        # at every run, not only when the plugins change).
        patch = json.dumps({"data": {"config.json": plugin_config("hca_staging")}})
        c.kubectl("-n", PROD, "patch", "configmap", "rdma-devices", "--type=merge", "-p", patch)
        c.wait_for(lambda: not any(k[1].startswith("pool ") for k in self.drift_findings(ctl)),
                   60, "the pool findings to clear after the fix")
        c.kubectl("-n", PROD, "patch", "configmap", "rdma-devices", "--type=merge", "-p",
                  json.dumps({"data": {"config.json": plugin_config("hca_prod")}}))
        # The baseline goes away: its findings stay, and the drift checks turn unknown.
        moved = self.baseline + ".moved"
        os.rename(self.baseline, moved)
        self.addCleanup(os.rename, moved, self.baseline)
        c.wait_for(lambda: ctl.value("tocsin_controller_drift_baseline_up") == 0, 60,
                   "tocsin_controller_drift_baseline_up 0")
        c.wait_for(lambda: ctl.value("tocsin_check_status", check="drift.node.firmware") == -1, 60,
                   "the drift checks unknown while the baseline cannot be read")
        found = self.drift_findings(ctl)
        self.assertIn(("drift.input.unreadable", "baseline"), found)
        self.assertIn(("drift.template.nccl", "template Job/llm-pretrain: NCCL_IB_HCA"), found)

    def test_a_baseline_cluster_is_listed_at_every_run(self):
        """--drift-context: staging is a cluster (here a context of the same API server, its
        namespace standing in), listed at every run; unreachable, it is said and never "ok"."""
        c = self.cluster
        context = c.kubectl("config", "current-context", "--kubeconfig", c.kubeconfig).stdout.strip()
        # The same cluster as its own baseline is refused (it would never drift)...
        r = run_tocsin("controller", "--kubeconfig", c.kubeconfig, "--listen", "127.0.0.1:0",
                       "--drift-context", context, "--drift-kubeconfig", c.kubeconfig, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("is the cluster this controller watches", r.stderr)
        # ...so "staging" is reached through another address (a TCP proxy to the same server).
        proxy = TcpProxy("127.0.0.1", int(c.env["K8S_API_PORT"]))
        self.addCleanup(proxy.close)
        with open(c.kubeconfig) as f:
            text = f.read().replace(c.server, f"https://127.0.0.1:{proxy.port}")
        staging = os.path.join(self.tmp, "staging.kubeconfig")
        with open(staging, "w") as f:
            f.write(text)
        ctl = ControllerProcess(c.kubeconfig, "--no-events", "--drift-context", context,
                                "--drift-kubeconfig", staging,
                                "--drift-baseline-namespace", STAGING, "--drift-namespace", PROD,
                                "--drift-interval", "1s", "--drift-class-label", HOST)
        self.addCleanup(ctl.stop)
        want = ("drift.rdma.resource", "pool rdma/hca_prod")
        found = c.wait_for(lambda: want in self.drift_findings(ctl) and self.drift_findings(ctl),
                           60, "drift.rdma.resource from the baseline cluster")
        self.assertEqual(set(found), SEEDED)
        self.assertEqual(ctl.value("tocsin_controller_drift_baseline_up"), 1)
        # Staging changes: the next run sees it (no snapshot to retake).
        patch = json.dumps({"data": {"config.json": plugin_config("hca_prod")}})
        c.kubectl("-n", STAGING, "patch", "configmap", "rdma-devices", "--type=merge", "-p", patch)
        self.addCleanup(c.kubectl, "-n", STAGING, "patch", "configmap", "rdma-devices",
                        "--type=merge", "-p",
                        json.dumps({"data": {"config.json": plugin_config("hca_staging")}}))
        c.wait_for(lambda: not any(k[1].startswith("pool ") for k in self.drift_findings(ctl)),
                   60, "the pool findings to clear once staging names production's resource")

        # A baseline cluster that does not answer: the controller runs, says so, and judges
        # nothing it cannot know.
        with open(c.kubeconfig) as f:
            text = f.read()
        down = os.path.join(self.tmp, "down.kubeconfig")
        with open(down, "w") as f:
            f.write(re.sub(r'server: "?[^",}\s]+"?', 'server: "https://127.0.0.1:1"', text))
        ctl = ControllerProcess(c.kubeconfig, "--no-events", "--drift-context", context,
                                "--drift-kubeconfig", down, "--drift-interval", "1s",
                                "--drift-class-label", HOST,
                                "--request-timeout", "2s")
        self.addCleanup(ctl.stop)
        c.wait_for(lambda: ("drift.input.unreadable", "baseline") in self.drift_findings(ctl), 60,
                   "drift.input.unreadable for a baseline cluster that does not answer")
        self.assertEqual(ctl.value("tocsin_controller_drift_baseline_up"), 0)
        self.assertEqual(ctl.value("tocsin_check_status", check="drift.node.firmware"), -1)
        self.assertEqual(set(self.drift_findings(ctl)), {("drift.input.unreadable", "baseline")})

        r = run_tocsin("controller", "--kubeconfig", c.kubeconfig, "--listen", "127.0.0.1:0",
                       "--drift-context", "no-such-context", "--drift-kubeconfig", c.kubeconfig,
                       timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--drift-context", r.stderr)

    def test_a_baseline_that_cannot_be_read_is_a_usage_error(self):
        r = run_tocsin("controller", "--kubeconfig", self.cluster.kubeconfig, "--listen",
                       "127.0.0.1:0", "--drift-baseline", os.path.join(self.tmp, "none.json"),
                       timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--drift-baseline", r.stderr)

    def test_without_the_opt_in_rbac_it_runs_and_says_what_it_cannot_read(self):
        c = self.cluster
        c.kubectl("create", "namespace", "tocsin", check=False)
        c.kubectl("apply", "-f", os.path.join(SOURCE, "deploy", "controller", "rbac.yaml"))
        # Another test (real_cluster_test applies every grant file) may have granted it already.
        c.kubectl("delete", "clusterrolebinding", "tocsin-controller-drift", "--ignore-not-found")
        token = c.service_account_token("tocsin", "tocsin-controller")
        kubeconfig = c.token_kubeconfig(os.path.join(self.tmp, "sa.kubeconfig"), token)
        ctl = self.controller(kubeconfig)
        unreadable = ("drift.input.unreadable", "live NetworkAttachmentDefinition")
        found = c.wait_for(lambda: unreadable in self.drift_findings(ctl) and self.drift_findings(ctl),
                           60, "drift.input.unreadable for the network attachments")
        # Not read: compared on neither side (absent is not absent in the cluster).
        self.assertNotIn(("drift.network.attachment", "network rdma-net: mtu"), found)
        self.assertIn(("drift.rdma.resource", "pool rdma/hca_prod"), found)
        self.assertIn(("drift.input.unreadable", "live CronJob"), found)
        # With the opt-in ClusterRole: the network is compared, nothing is unreadable.
        c.kubectl("apply", "-f", os.path.join(SOURCE, "deploy", "components", "drift", "drift-rbac.yaml"))
        c.wait_for(lambda: ("drift.network.attachment", "network rdma-net: mtu") in
                   self.drift_findings(ctl) and not any(
                       k[0] == "drift.input.unreadable" for k in self.drift_findings(ctl)),
                   60, "the network attachments compared once drift-rbac.yaml is granted")


if __name__ == "__main__":
    unittest.main()
