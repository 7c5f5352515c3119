"""tocsin against a real Kubernetes 1.20.2 control plane (tools/k8s/up.sh): what only a real cluster
decides. The DaemonSet controller's own status fields for a crash-looping device plugin, the
scheduler's own reason for a Pending job, RBAC for every manifest under deploy/ and for each component
with its own ServiceAccount token. Faults on demand (hangs, 5xx, truncated bodies) stay with the
Python test API server (tests/k8s_api), which can produce them.

Run by `make test` (which brings the control plane up and sets TOCSIN_K8S_ENV); by hand:
  make k8s-up && TOCSIN_K8S_ENV=build/k8s/env TOCSIN_BINARY=build/release/tocsin \
    python3 tests/k8s/real_cluster_test.py
"""
import glob
import json
import re
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import (SOURCE, ClusterTestCase, load_env, no_skip, run_tocsin, skip,  # noqa: E402
                     tocsin_binary)

FABRIC_NODES = ["gpu-node-01", "gpu-node-02"]
PLUGIN_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"


def quantity(q):
    """A decimal-SI quantity as an integer ("1k" -> 1000); None stays None."""
    if q is None:
        return None
    for suffix, factor in (("k", 10**3), ("M", 10**6), ("G", 10**9)):
        if q.endswith(suffix):
            return int(q[:-1]) * factor
    return int(q)


def findings(report, check):
    return [f for f in report["findings"] if f["check"] == check]


class ControlPlaneTest(ClusterTestCase):
    def test_real_apiserver_and_ready_nodes(self):
        version = self.cluster.api("GET", "/version")
        self.assertEqual(version["gitVersion"], "v1.20.2")
        with open(self.cluster.env["K8S_NODES"]) as f:
            expected = {n["metadata"]["name"]: n for n in json.load(f)["items"]}

        def nodes_ready():
            nodes = self.cluster.get("nodes")["items"]
            ready = {n["metadata"]["name"] for n in nodes
                     for c in n["status"].get("conditions", [])
                     if c["type"] == "Ready" and c["status"] == "True"}
            return nodes if ready == set(expected) else None
        nodes = self.cluster.wait_for(nodes_ready, 60, "every node of K8S_NODES Ready")
        for n in nodes:
            want = expected[n["metadata"]["name"]]["status"]["allocatable"]
            for resource in ("nvidia.com/gpu", "rdma/hca_shared_devices_a"):
                # The apiserver canonicalises quantities ("1000" is served as "1k").
                self.assertEqual(quantity(n["status"]["allocatable"].get(resource)),
                                 quantity(want.get(resource)), resource)
            # The admission plugin's not-ready taint was removed once the node became Ready.
            taints = [t["key"] for t in n["spec"].get("taints") or []]
            self.assertNotIn("node.kubernetes.io/not-ready", taints)


class SchedulerTest(ClusterTestCase):
    """A job asking for an RDMA resource no node can give stays Pending with the scheduler's reason."""

    def test_pending_job_carries_the_schedulers_reason(self):
        ns = self.cluster.namespace("tocsin-sched")
        job = {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "needs-rdma-b", "namespace": ns},
            "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "train", "image": "busybox", "command": ["true"],
                                "resources": {"limits": {"rdma/hca_shared_devices_b": "1"}}}]}}}}
        self.cluster.kubectl("apply", "-f", "-", stdin=json.dumps(job))

        def unschedulable():
            pods = self.cluster.get("pods", "-n", ns, "-l", "job-name=needs-rdma-b")["items"]
            conds = [c for p in pods for c in p["status"].get("conditions", [])
                     if c["type"] == "PodScheduled" and c["status"] == "False"]
            return conds if len(pods) == 2 and len(conds) == 2 else None
        conds = self.cluster.wait_for(unschedulable, 60, "both pods Unschedulable")
        for c in conds:
            self.assertEqual(c["reason"], "Unschedulable")
            # 1.20's message: "0/3 nodes are available: 3 Insufficient rdma/hca_shared_devices_b."
            self.assertIn("Insufficient rdma/hca_shared_devices_b", c["message"])
        self.cluster.kubectl("delete", "namespace", ns, "--wait=false")


class LiveEqualsSnapshotTest(ClusterTestCase):
    """audit live and audit --from a kubectl snapshot of the same real cluster say the same thing
    (the fixture-based version of this runs against the test API server)."""

    def test_live_findings_equal_snapshot_findings(self):
        c = self.cluster
        ns = c.namespace("tocsin-same")
        # Something to find that stays put: a job the scheduler cannot place.
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "stuck", "namespace": ns},
               "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
                   "restartPolicy": "Never",
                   "containers": [{"name": "train", "image": "busybox", "command": ["true"],
                                   "resources": {"limits": {"rdma/hca_shared_devices_b": "1"}}}]}}}}
        c.kubectl("apply", "-f", "-", stdin=json.dumps(job))
        now = "2026-11-29T00:00:00Z"
        snapshot = os.path.join(tempfile.mkdtemp(prefix="tocsin-same-"), "cluster.json")

        def agree():
            # Other tests' namespaces may still be going away: compare once the cluster is quiet.
            with open(snapshot, "w") as f:
                f.write(c.kubectl("get", "nodes,pods,daemonsets,configmaps", "-A", "-o",
                                  "json").stdout)
            live = run_tocsin("audit", "-o", "json", "--now", now, "--kubeconfig", c.kubeconfig)
            again = c.kubectl("get", "nodes,pods,daemonsets,configmaps", "-A", "-o", "json").stdout
            with open(snapshot) as f:
                if json.loads(f.read())["items"] != json.loads(again)["items"]:
                    return None  # the cluster changed while the audit read it
            frm = run_tocsin("audit", "-o", "json", "--now", now, "--from", snapshot)
            return (live, frm) if live.stdout and frm.stdout else None
        def none_going_away():
            items = json.loads(c.kubectl("get", "namespaces", "-o", "json").stdout)["items"]
            return not [n for n in items if n.get("status", {}).get("phase") == "Terminating"]
        # A namespace being deleted (its crash-looping pods restarting until they go) keeps the
        # cluster from ever being still for a whole audit on a loaded machine: wait for them.
        c.wait_for(none_going_away, 240, "other tests' namespaces to be deleted", interval=1)
        live, frm = c.wait_for(agree, 90, "a quiet cluster to compare live and snapshot on")
        self.assertEqual(live.returncode, frm.returncode, live.stderr + frm.stderr)
        found = json.loads(live.stdout)["findings"]
        self.assertEqual(found, json.loads(frm.stdout)["findings"])
        # Not two empty lists: the fabric nodes have no device plugin here, at the least.
        self.assertIn("daemonset.coverage", [f["check"] for f in found])
        shutil.rmtree(os.path.dirname(snapshot), ignore_errors=True)
        c.kubectl("delete", "namespace", ns, "--wait=false")


class DaemonSetControllerTest(ClusterTestCase):
    """A device plugin whose container exits 1 crash-loops for real on every fabric node."""

    def test_crashlooping_device_plugin_is_reported_with_the_controllers_counters(self):
        ns = self.cluster.namespace("tocsin-dp")
        ds = {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "rdma-shared-dp-ds", "namespace": ns},
            "spec": {"selector": {"matchLabels": {"name": "rdma-shared-dp-ds"}}, "template": {
                "metadata": {"labels": {"name": "rdma-shared-dp-ds"}},
                "spec": {"nodeSelector": {"network.nvidia.com/rdma": "true"},
                         "containers": [{"name": "k8s-rdma-shared-dp-ds", "image": PLUGIN_IMAGE,
                                         "command": ["sh", "-c",
                                                     "echo 'error: no RDMA devices'; exit 1"]}]}}}}
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "exporter", "namespace": ns},
            "spec": {"nodeName": "cpu-node-01", "restartPolicy": "Always",
                     "containers": [{"name": "exporter", "image": "busybox",
                                     "command": ["sh", "-c", "exit 3"]}]}}
        self.cluster.kubectl("apply", "-f", "-", stdin=json.dumps(ds))
        self.cluster.kubectl("apply", "-f", "-", stdin=json.dumps(pod))

        def crashlooping():
            pods = self.cluster.get("pods", "-n", ns)["items"]
            looping = {}
            for p in pods:
                for s in p["status"].get("containerStatuses") or []:
                    waiting = (s.get("state") or {}).get("waiting") or {}
                    if waiting.get("reason") == "CrashLoopBackOff" and s["restartCount"] >= 1:
                        looping[p["metadata"]["name"]] = p
            return looping if len(looping) == 3 else None
        pods = self.cluster.wait_for(crashlooping, 90, "3 pods in CrashLoopBackOff")
        plugin_nodes = sorted(p["spec"]["nodeName"] for p in pods.values()
                              if p["metadata"].get("ownerReferences"))
        self.assertEqual(plugin_nodes, FABRIC_NODES)

        live = self.cluster.get("daemonset", "-n", ns, "rdma-shared-dp-ds")["status"]
        self.assertEqual(live["desiredNumberScheduled"], 2)
        self.assertEqual(live.get("numberReady", 0), 0)

        r = run_tocsin("audit", "-o", "json", "--kubeconfig", self.cluster.kubeconfig)
        self.assertEqual(r.returncode, 1, r.stderr)
        report = json.loads(r.stdout)
        [f] = [f for f in findings(report, "daemonset.not-ready") if f["subject"].startswith(ns)]
        self.assertEqual(f["subject"], f"{ns}/rdma-shared-dp-ds")
        ev = f["evidence"]
        # The controller's own counters, as the audit read them from the live object.
        self.assertEqual(ev["desired"], live["desiredNumberScheduled"])
        self.assertEqual(ev["current"], live["currentNumberScheduled"])
        self.assertEqual(ev["ready"], 0)
        self.assertTrue(ev["never_ready"])
        self.assertTrue(ev["device_plugin"])
        self.assertEqual(sorted(p["node"] for p in ev["not_ready_pods"]), FABRIC_NODES)
        for p in ev["not_ready_pods"]:
            [c] = p["containers"]
            self.assertEqual(c["waiting_reason"], "CrashLoopBackOff")
            self.assertGreaterEqual(c["restart_count"], 1)
            self.assertEqual(c["last_exit_code"], 1)
        self.assertIn("CrashLoopBackOff", f["message"])
        [loop] = [f for f in findings(report, "pod.crashloop") if f["subject"] == f"{ns}/exporter"]
        self.assertEqual(loop["evidence"]["node"], "cpu-node-01")
        self.assertIn("code 3", loop["message"])
        self.cluster.kubectl("delete", "namespace", ns, "--wait=false")


# What a user installs (README, "Install"): applied for real. Every other kustomization is applied
# with a server dry-run only, and so is every file that a kustomization already holds: a file
# applied on its own could hide what its kustomization gets wrong (the agent's Events Role was
# once moved out of `default` by kustomize, and the file applied with -f put it back).
INSTALL = "deploy/overlays/prometheus"

# Files applied with a server dry-run only, though no kustomization holds them, and why.
DRY_RUN_ONLY = {
    # It would send every namespace's Job creations to a Service with no controller behind it
    # (ignored, but in every later test); admission_webhook_test registers the webhook by URL.
    "deploy/components/admission-webhook/admission-webhook.yaml":
        "a cluster-wide webhook without its server",
}


def deploy_manifests():
    """Every Kubernetes manifest under deploy/, as (description, kubectl arguments, for real)."""
    import yaml
    out, held = [], set()
    for kustomization in sorted(glob.glob(os.path.join(SOURCE, "deploy", "**", "kustomization.yaml"),
                                          recursive=True)):
        folder = os.path.dirname(kustomization)
        with open(kustomization) as f:
            k = yaml.safe_load(f)
        if k.get("kind") == "Component":
            continue  # not buildable alone (deploy_kustomize_test renders it inside an overlay);
            # its files are applied on their own, as the canary tests need them
        for r in k.get("resources", []):
            held.add(os.path.normpath(os.path.join(folder, r)))
        rel = os.path.relpath(folder, SOURCE)
        out.append((rel, ["-k", folder], rel == INSTALL))
    for path in sorted(glob.glob(os.path.join(SOURCE, "deploy", "**", "*.yaml"), recursive=True)):
        rel = os.path.relpath(path, SOURCE)
        if rel.startswith(os.path.join("deploy", "helm") + os.sep):
            continue  # Helm templates, not manifests: the chart renders deploy/base (deploy_helm_test)
        with open(path) as f:
            text = f.read()
        if "apiVersion:" not in text or re.search(r"^kind: (Kustomization|Component)$", text, re.M):
            continue  # not a Kubernetes object (Prometheus rules, their tests) or a kustomization
        out.append((rel, ["-f", path],
                    os.path.normpath(path) not in held and rel not in DRY_RUN_ONLY))
    return out


# Manifests that use API fields 1.20 does not have; what replaces them on 1.20 is said beside.
NEEDS_NEWER = {
    # completionMode: Indexed is 1.21+ (beta 1.22); on 1.20 the same benchmark is one Job per rank.
    "deploy/examples/bench-net-indexed-job.yaml": "Indexed Jobs need Kubernetes 1.21+",
    "deploy/examples/bench-storage-job.yaml": "Indexed Jobs need Kubernetes 1.21+",
    # policy/v1 PodDisruptionBudgets are 1.21+ (1.20 has only v1beta1, removed in 1.25).
    "deploy/controller/pdb.yaml": "policy/v1 is Kubernetes 1.21+",
    # admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is 1.30+ (and the token's
    # node-name claim): deploy_manifests_test checks it, and its CEL, without a cluster.
    "deploy/agent/node-restriction-policy.yaml": "ValidatingAdmissionPolicy is Kubernetes 1.30+",
    # The Prometheus Operator's kinds (see NEEDS_NEWER_KINDS).
    "deploy/overlays/prometheus-operator/monitors.yaml": "the Prometheus Operator's CRDs",
    "deploy/overlays/prometheus-operator/prometheusrule.yaml": "the Prometheus Operator's CRDs",
}


# Kinds in a kustomization that 1.20 does not serve: left out of what is applied here, said why.
NEEDS_NEWER_KINDS = {
    ("policy/v1", "PodDisruptionBudget"): "policy/v1 is Kubernetes 1.21+ (1.20 has only v1beta1)",
    # Not a version matter: the Prometheus Operator's CRDs are not in the test cluster (no copy
    # offline). deploy_kustomize_test checks these objects against the operator's own schemas.
    ("monitoring.coreos.com/v1", "PodMonitor"): "the Prometheus Operator's CRDs are not installed",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "the Prometheus Operator's CRDs are not installed",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "the Prometheus Operator's CRDs are not installed",
}


def apply_args(cluster, args):
    """kubectl apply arguments for one manifest; a kustomization is rendered and the kinds 1.20
    lacks are dropped (NEEDS_NEWER_KINDS), the rest applied from stdin."""
    if args[0] != "-k":
        return args, None
    import yaml
    docs = [d for d in yaml.safe_load_all(cluster.kubectl("kustomize", args[1]).stdout) if d]
    kept = [d for d in docs if (d.get("apiVersion"), d.get("kind")) not in NEEDS_NEWER_KINDS]
    return ["-f", "-"], json.dumps({"apiVersion": "v1", "kind": "List", "items": kept})


class RbacTest(ClusterTestCase):
    """Every manifest applies (server dry-run, then for real); each component gets exactly its rights."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="tocsin-rbac-")
        c = cls.cluster
        c.kubectl("delete", "namespace", "tocsin", "--ignore-not-found", "--wait=true", timeout=120)
        # A server dry-run cannot create the namespace the other objects go into: it must exist.
        c.kubectl("create", "namespace", "tocsin", "--save-config")
        manifests = deploy_manifests()
        cls.apply_warnings = []
        for rel, args, for_real in manifests:
            if rel in NEEDS_NEWER:
                continue
            apply, stdin = apply_args(c, args)
            runs = [c.kubectl("apply", "--dry-run=server", *apply, stdin=stdin)]
            if for_real:
                runs.append(c.kubectl("apply", *apply, stdin=stdin))
            # Zero warnings: a deprecated field or API, an unknown field kubectl dropped.
            cls.apply_warnings += [f"{rel}: {line}" for r in runs
                                   for line in r.stderr.splitlines() if "arning" in line]
        # rbac-taint.yaml is an optional grant (patch nodes, for `taint: true`): what it allows is
        # checked here, then it is removed so that the tests below see the agent's default rights.
        cls.taint_grant_allows = cls.allowed(c.service_account_token("tocsin", "tocsin-agent"),
                                             "patch", "nodes", "")
        c.kubectl("delete", "-f", os.path.join(SOURCE, "deploy", "agent", "rbac-taint.yaml"))
        # The agent DaemonSet as deployed runs on every node (the test kubelet runs its pods with
        # the ServiceAccount token the admission plugin mounted) and writes each node's conditions.
        # Then it is removed, so that the agent run by hand below is the only writer of gpu-node-01.
        cls.daemonset_conditions, cls.daemonset_skip = None, ""
        if os.geteuid() != 0:
            cls.daemonset_skip = ("not root: the test kubelet mounts no volumes (the agent's "
                                  "ServiceAccount token and ConfigMap) and runs no node namespaces")
        else:
            def conditions():
                out = {}
                for n in c.get("nodes")["items"]:
                    types = {x["type"]: x for x in n["status"].get("conditions", [])}
                    if "TocsinChecksStale" in types:
                        out[n["metadata"]["name"]] = types
                return out if len(out) == 3 else None
            try:
                cls.daemonset_conditions = c.wait_for(conditions, 120,
                                                      "the agent DaemonSet's conditions on 3 nodes")
                cls.daemonset_status = c.get("daemonset", "-n", "tocsin", "tocsin-agent")["status"]
            finally:
                c.kubectl("delete", "daemonset", "-n", "tocsin", "tocsin-agent", "--wait=true",
                          timeout=120)
                c.wait_for(lambda: not c.get("pods", "-n", "tocsin", "-l",
                                             "app.kubernetes.io/name=tocsin-agent")["items"], 60,
                           "the agent's pods to be gone")

        # The controller Deployment as deployed: two replicas, in-cluster credentials, one of them
        # holds the Lease. Then it is removed, so that it posts no Events about other tests.
        cls.controller_holder, cls.controller_pods = None, []
        if not cls.daemonset_skip:
            def holder():
                pods = [p["metadata"]["name"] for p in
                        c.get("pods", "-n", "tocsin", "-l",
                              "app.kubernetes.io/name=tocsin-controller")["items"]
                        if p["status"].get("phase") == "Running"]
                lease = c.api("GET", "/apis/coordination.k8s.io/v1/namespaces/tocsin/leases/"
                                     "tocsin-controller")
                who = (lease.get("spec") or {}).get("holderIdentity") or ""
                return (who, pods) if len(pods) == 2 and who else None
            try:
                cls.controller_holder, cls.controller_pods = c.wait_for(
                    holder, 120, "the controller Deployment's 2 pods and a Lease holder")
            finally:
                c.kubectl("delete", "deployment", "-n", "tocsin", "tocsin-controller",
                          "--wait=true", timeout=120)
                c.kubectl("delete", "lease", "-n", "tocsin", "tocsin-controller",
                          "--ignore-not-found")
                c.wait_for(lambda: not c.get("pods", "-n", "tocsin")["items"], 60,
                           "the controller's pods to be gone")

    def test_controller_deployment_elects_one_of_its_replicas(self):
        if self.daemonset_skip:
            skip(self.daemonset_skip)
        # client-go's identity: the pod's name and a random suffix.
        self.assertEqual(len(self.controller_pods), 2)
        self.assertTrue(any(self.controller_holder.startswith(p + "_")
                            for p in self.controller_pods), self.controller_holder)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)  # ServiceAccount-token kubeconfigs
        super().tearDownClass()

    def test_every_manifest_was_found_and_applied(self):
        found = {rel: for_real for rel, _, for_real in deploy_manifests()}
        # The manifests this test must cover: if they move, the test fails instead of passing empty.
        for must in ("deploy/agent", "deploy/agent/rbac-taint.yaml", "deploy/rbac/audit.yaml",
                     "deploy/controller", "deploy/base", "deploy/overlays/prometheus",
                     "deploy/overlays/prometheus-operator", "deploy/overlays/exporter-only",
                     "deploy/components/canary/canary-rbac.yaml"):
            self.assertIn(must, found)
        # Applied for real: the install and the grants no kustomization holds; nothing else.
        self.assertEqual({rel for rel, real in found.items() if real}, {
            INSTALL, "deploy/agent/rbac-taint.yaml", "deploy/agent/rbac-proxy.yaml",
            "deploy/rbac/audit.yaml", "deploy/components/canary/canary-rbac.yaml",
            "deploy/components/policy-params/policy-params-rbac.yaml",
            "deploy/components/drift/drift-rbac.yaml",
            "deploy/agent/node-restriction-policy.yaml", "deploy/examples/bench-net-indexed-job.yaml",
            "deploy/examples/bench-storage-job.yaml"})
        # (the DaemonSet was applied too; setUpClass removed it once its pods had reported)
        for kind, name in (("serviceaccount", "tocsin-agent"), ("serviceaccount", "tocsin-audit"),
                           ("configmap", "tocsin-agent")):
            self.cluster.kubectl("get", "-n", "tocsin", kind, name)
        self.cluster.kubectl("get", "clusterrole", "tocsin-agent", "tocsin-audit")

    def test_every_manifest_applies_without_a_warning(self):
        self.assertEqual(self.apply_warnings, [])

    def token(self, name):
        return self.cluster.service_account_token("tocsin", name)

    def test_audit_runs_with_its_own_service_account(self):
        kc = self.cluster.token_kubeconfig(os.path.join(self.tmp, "audit.kubeconfig"),
                                           self.token("tocsin-audit"))
        r = run_tocsin("audit", "-o", "json", "--kubeconfig", kc)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(report["inventory"]["nodes"], 3, report["inventory"])

    def test_audit_without_rights_is_a_clear_error_naming_the_rbac_file(self):
        """The real authorizer's 403, as tocsin audit reports it (the fake's --forbid, for real)."""
        c = self.cluster
        c.kubectl("create", "serviceaccount", "-n", "tocsin", "tocsin-nobody")
        kc = c.token_kubeconfig(os.path.join(self.tmp, "nobody.kubeconfig"),
                                c.service_account_token("tocsin", "tocsin-nobody"))
        r = run_tocsin("audit", "--kubeconfig", kc)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("HTTP 403", r.stderr)
        self.assertIn("deploy/rbac/audit.yaml", r.stderr)

    def test_agent_for_an_unknown_node_keeps_serving_and_says_why(self):
        c = self.cluster
        kc = c.token_kubeconfig(os.path.join(self.tmp, "agent-unknown.kubeconfig"),
                                self.token("tocsin-agent"))
        agent = subprocess.Popen(
            [tocsin_binary(), "agent", "--root", os.path.join(SOURCE, "testdata", "nodes", "empty"),
             "--listen", "127.0.0.1:0", "--kubeconfig", kc, "--node-name", "no-such-node",
             "--reconcile", "200ms"],
            env=dict(os.environ, KUBECONFIG=""), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        lines = []
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # bounded, even if the agent went quiet
                ready, _, _ = select.select([agent.stderr], [], [], deadline - time.monotonic())
                if not ready:
                    break
                line = agent.stderr.readline()
                if not line:
                    break
                lines.append(line)
                if "/api/v1/nodes/no-such-node: HTTP 404" in line:
                    break
        finally:
            agent.terminate()
            try:
                agent.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.communicate()
        self.assertTrue(any("/api/v1/nodes/no-such-node: HTTP 404" in x for x in lines),
                        "".join(lines[-20:]))
        self.assertEqual(agent.returncode, 0)

    def test_audit_is_denied_what_it_should_not_have(self):
        token = self.token("tocsin-audit")
        c = self.cluster
        self.assertEqual(c.status_of("GET", "/api/v1/secrets", token=token), 403)
        self.assertEqual(c.status_of("GET", "/api/v1/namespaces/tocsin/configmaps", token=token), 403)
        self.assertEqual(c.status_of("DELETE", "/api/v1/namespaces/tocsin/pods/anything",
                                     token=token), 403)
        self.assertEqual(c.status_of("PATCH", "/api/v1/nodes/gpu-node-01", {"metadata": {}},
                                     token=token, content_type="application/merge-patch+json"), 403)

    def test_controller_has_exactly_its_rights(self):
        """deploy/controller/rbac.yaml through the real authorizer: what the controller does
        is allowed, the rest is not."""
        token = self.token("tocsin-controller")
        c = self.cluster

        def can(verb, resource, ns="", name="", group=""):
            attrs = {"verb": verb, "resource": resource, "group": group}
            if ns:
                attrs["namespace"] = ns
            if name:
                attrs["name"] = name
            review = c.api("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                           {"apiVersion": "authorization.k8s.io/v1",
                            "kind": "SelfSubjectAccessReview",
                            "spec": {"resourceAttributes": attrs}}, token=token)
            return review["status"]["allowed"]
        for verb in ("get", "list", "watch"):
            for resource, group in (("nodes", ""), ("pods", ""), ("daemonsets", "apps"),
                                    ("jobs", "batch"), ("pytorchjobs", "kubeflow.org"),
                                    ("mpijobs", "kubeflow.org"), ("jobsets", "jobset.x-k8s.io")):
                self.assertTrue(can(verb, resource, group=group), (verb, resource))
        self.assertTrue(can("get", "configmaps", "kube-system", "rdma-devices"))
        self.assertTrue(can("create", "events", "default"))
        self.assertTrue(can("patch", "events", "some-team"))
        self.assertTrue(can("create", "leases", "tocsin", group="coordination.k8s.io"))
        for verb in ("get", "update"):
            self.assertTrue(can(verb, "leases", "tocsin", "tocsin-controller",
                                group="coordination.k8s.io"))
        # canary-rbac.yaml (applied with every manifest): Jobs, the anchor ConfigMap and the
        # token Secret in its own namespace, by name where RBAC can say so.
        for verb in ("create", "delete"):
            self.assertTrue(can(verb, "jobs", "tocsin", group="batch"))
        self.assertTrue(can("update", "configmaps", "tocsin", "tocsin-canary"))
        self.assertTrue(can("get", "secrets", "tocsin", "tocsin-canary-token"))
        self.assertTrue(can("list", "events", "tocsin"))
        denied = [("list", "configmaps", "", "", ""), ("get", "secrets", "tocsin", "x", ""),
                  ("create", "jobs", "default", "", "batch"), ("delete", "jobs", "team", "x", "batch"),
                  ("update", "configmaps", "tocsin", "other", ""), ("list", "secrets", "tocsin", "", ""),
                  ("list", "events", "default", "", ""),
                  ("delete", "pods", "tocsin", "x", ""), ("patch", "nodes", "", "gpu-node-01", ""),
                  ("update", "daemonsets", "kube-system", "x", "apps"),
                  ("update", "leases", "tocsin", "another", "coordination.k8s.io"),
                  ("create", "leases", "kube-system", "", "coordination.k8s.io"),
                  ("delete", "leases", "tocsin", "tocsin-controller", "coordination.k8s.io"),
                  ("delete", "events", "default", "x", "")]
        for verb, resource, ns, name, group in denied:
            self.assertFalse(can(verb, resource, ns, name, group), (verb, resource, ns, name))
        self.assertEqual(c.status_of("GET", "/api/v1/secrets", token=token), 403)

    def test_agent_daemonset_runs_with_its_own_service_account(self):
        if self.daemonset_skip:
            skip(self.daemonset_skip)
        for node, conds in self.daemonset_conditions.items():
            self.assertEqual(conds["TocsinChecksStale"]["status"], "False", node)
            self.assertIn("Ready", conds, node)  # the kubelet's own conditions were kept
        self.assertEqual(self.daemonset_status["desiredNumberScheduled"], 3)

    def test_agent_writes_conditions_and_events_with_its_own_token(self):
        """The agent by hand on a broken fixture node, as gpu-node-01, with its ServiceAccount's
        token: the real apiserver merges its conditions into the node's (strategic merge by type)
        and takes its Event."""
        c = self.cluster
        kc = c.token_kubeconfig(os.path.join(self.tmp, "agent.kubeconfig"), self.token("tocsin-agent"))
        root = os.path.join(SOURCE, "testdata", "nodes", "ib-port-down")
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        agent = subprocess.Popen(
            [tocsin_binary(), "agent", "--root", root, "--listen", "127.0.0.1:0",
             "--kubeconfig", kc, "--reconcile", "200ms"],
            env=dict(os.environ, NODE_NAME="gpu-node-01", KUBECONFIG=""),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            def degraded():
                node = c.get("node", "gpu-node-01")
                conds = {x["type"]: x for x in node["status"].get("conditions", [])}
                cond = conds.get("RDMAFabricDegraded")
                return conds if cond and cond["status"] == "True" else None
            conds = c.wait_for(degraded, 60, "RDMAFabricDegraded=True on gpu-node-01")
            self.assertEqual(conds["RDMAFabricDegraded"]["reason"], "RdmaPortDown")
            self.assertEqual(conds["Ready"]["status"], "True")  # merged, not replaced
            def event():  # this run's (a cluster kept up by hand has earlier runs' too)
                events = c.get("events", "-n", "default",
                               "--field-selector", "involvedObject.name=gpu-node-01")["items"]
                return [e for e in events if e.get("source", {}).get("component") == "tocsin-agent"
                        and e["reason"] == "RdmaPortDown" and e["lastTimestamp"] >= started]
            [e] = c.wait_for(event, 30, "the agent's Event")
            self.assertEqual((e["type"], e["reason"]), ("Warning", "RdmaPortDown"))
            self.assertEqual(e["involvedObject"]["kind"], "Node")
        finally:
            agent.terminate()
            try:
                _, err = agent.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()
                _, err = agent.communicate()
                self.fail("the agent did not stop within 10 s of SIGTERM: " + err)
        self.assertEqual(agent.returncode, 0, err)
        # No request of the agent was refused (ApiClient says "HTTP 403: ..."; a bare "403"
        # would also match a port such as :40323 in the log).
        self.assertNotIn("HTTP 403", err)
        self.assertNotIn("forbidden", err.lower())

    def test_agent_has_nodes_status_but_not_nodes(self):
        token = self.token("tocsin-agent")
        c = self.cluster
        patch = {"metadata": {"labels": {"tocsin-test": "x"}}}
        self.assertEqual(c.status_of("PATCH", "/api/v1/nodes/gpu-node-01", patch, token=token,
                                     content_type="application/merge-patch+json"), 403)
        self.assertEqual(c.status_of("GET", "/api/v1/secrets", token=token), 403)
        self.assertEqual(c.status_of("DELETE", "/api/v1/namespaces/tocsin/pods/anything",
                                     token=token), 403)
        self.assertEqual(c.status_of("GET", "/api/v1/nodes", token=token), 403)  # get, not list
        # What it is granted, as the real authorizer decides it (no write needed to know).
        for verb, resource, sub in (("patch", "nodes", "status"), ("get", "nodes", ""),
                                    ("list", "pods", "")):
            self.assertTrue(self.allowed(token, verb, resource, sub), (verb, resource, sub))
        self.assertFalse(self.allowed(token, "patch", "nodes", ""))
        # With the optional rbac-taint.yaml applied, and only then, it may patch the Node.
        self.assertTrue(self.taint_grant_allows)

    @classmethod
    def allowed(cls, token, verb, resource, subresource):
        review = cls.cluster.api("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
                                            "subresource": subresource, "name": "gpu-node-01"}}},
            token=token)
        return review["status"]["allowed"]


if __name__ == "__main__":
    if load_env()[0] is None:
        print("SKIPPED:", load_env()[1])
        sys.exit(1 if no_skip() else 77)
    unittest.main(verbosity=2)
