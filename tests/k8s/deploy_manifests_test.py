#!/usr/bin/env python3
"""deploy/ without a cluster: the audit's RBAC grants exactly what `tocsin audit` reads; the
agent's optional node-restriction policy is well formed, stays out of the default kustomization,
and its CEL admits the agent's own Node and denies any other; the DaemonSet's container is
seccomp'd and says why it runs as uid 0.

    python3 tests/k8s/deploy_manifests_test.py -v

Needs python3-yaml, and Node.js with @bufbuild/cel (tools/deps.sh installs both).
"""

import json
import os
import subprocess
import sys
import unittest

try:
    import yaml
except ImportError:  # python3-yaml (Debian) or PyYAML
    sys.exit("deploy_manifests_test: needs python3-yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")


def load(*path):
    with open(os.path.join(DEPLOY, *path)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def rights(docs):
    out = set()
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in doc["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add((group, resource, verb))
    return out


# CEL is evaluated by the real thing, offline: @bufbuild/cel (npm), which tools/deps.sh installs
# into /var/cache/tocsin/npm, through tests/k8s/cel_eval.cjs.
NPM_DIR = os.environ.get("TOCSIN_NPM_DIR", "/var/cache/tocsin/npm")
CEL_EVAL = os.path.join(ROOT, "tests", "k8s", "cel_eval.cjs")


def cel(expression, request):
    """The expression's value for `request`, or None when CEL could not evaluate it (an error:
    the policy's failurePolicy decides)."""
    r = subprocess.run(["node", CEL_EVAL], input=json.dumps(
        {"expression": expression, "bindings": {"request": request}}), capture_output=True,
        text=True, timeout=60, env=dict(os.environ, NODE_PATH=os.path.join(NPM_DIR, "node_modules")))
    if r.returncode != 0:
        raise AssertionError("cel_eval.cjs failed (is @bufbuild/cel installed? make test runs "
                             "tools/deps.sh): " + r.stderr)
    out = json.loads(r.stdout)
    if "error" in out:
        return None
    return out["value"]


def node_request(user, node, operation="UPDATE", node_name_claim=None):
    info = {"username": user}
    if node_name_claim is not None:
        info["extra"] = {"authentication.kubernetes.io/node-name": [node_name_claim]}
    return {"operation": operation, "name": node, "resource": {"resource": "nodes"},
            "subResource": "status", "userInfo": info}


AGENT = "system:serviceaccount:tocsin:tocsin-agent"


class AuditRbacTest(unittest.TestCase):
    def role(self, name):
        docs = [d for d in load("rbac", "audit.yaml")
                if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
        self.assertEqual(len(docs), 1, name)
        return docs

    def test_exactly_what_audit_reads(self):
        # k8s::LoadCluster: paged lists of nodes, pods and daemonsets; a GET per device-plugin
        # ConfigMap. Nothing else (no watch, no Jobs or training kinds).
        self.assertEqual(rights(self.role("tocsin-audit")), {
            ("", "nodes", "list"), ("", "pods", "list"), ("apps", "daemonsets", "list"),
            ("", "configmaps", "get")})

    def test_exactly_what_diff_reads(self):
        # k8s::LoadFabric: lists only (no pods, no watch, no writes), a GET per device-plugin
        # ConfigMap.
        self.assertEqual(rights(self.role("tocsin-diff")), {
            ("", "nodes", "list"), ("apps", "daemonsets", "list"), ("", "configmaps", "get"),
            ("k8s.cni.cncf.io", "network-attachment-definitions", "list"),
            ("sriovnetwork.openshift.io", "sriovnetworknodepolicies", "list"),
            ("mellanox.com", "nicclusterpolicies", "list"),
            ("batch", "jobs", "list"), ("batch", "cronjobs", "list"),
            ("kubeflow.org", "pytorchjobs", "list"), ("kubeflow.org", "mpijobs", "list"),
            ("jobset.x-k8s.io", "jobsets", "list")})
        # Every rule of both roles reads; none writes.
        for doc in load("rbac", "audit.yaml"):
            for rule in doc.get("rules", []):
                self.assertLessEqual(set(rule["verbs"]), {"get", "list"}, rule)

    def test_cluster_wide_grants_are_said(self):
        with open(os.path.join(DEPLOY, "rbac", "audit.yaml")) as f:
            self.assertIn("cluster-wide grants", f.read())
        with open(os.path.join(DEPLOY, "agent", "node-restriction-policy.yaml")) as f:
            self.assertIn("cluster-wide grants", f.read())


class NodeRestrictionPolicyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        docs = load("agent", "node-restriction-policy.yaml")
        cls.docs = {d["kind"]: d for d in docs}
        cls.policy = cls.docs["ValidatingAdmissionPolicy"]

    def test_objects(self):
        self.assertEqual(set(self.docs), {"ValidatingAdmissionPolicy",
                                          "ValidatingAdmissionPolicyBinding"})
        for d in self.docs.values():
            self.assertEqual(d["apiVersion"], "admissionregistration.k8s.io/v1")
        binding = self.docs["ValidatingAdmissionPolicyBinding"]
        self.assertEqual(binding["spec"]["policyName"], self.policy["metadata"]["name"])
        self.assertEqual(binding["spec"]["validationActions"], ["Deny"])
        self.assertEqual(self.policy["spec"]["failurePolicy"], "Fail")
        rules = self.policy["spec"]["matchConstraints"]["resourceRules"]
        self.assertEqual({r for rule in rules for r in rule["resources"]},
                         {"nodes", "nodes/status"})
        self.assertIn("UPDATE", {op for rule in rules for op in rule["operations"]})

    def test_optional_not_in_the_default_kustomization(self):
        with open(os.path.join(DEPLOY, "agent", "kustomization.yaml")) as f:
            resources = yaml.safe_load(f)["resources"]
        self.assertNotIn("node-restriction-policy.yaml", resources)

    def test_matches_the_agents_service_account(self):
        sa = [d for d in load("agent", "rbac.yaml") if d["kind"] == "ServiceAccount"][0]
        user = "system:serviceaccount:%s:%s" % (sa["metadata"]["namespace"],
                                                sa["metadata"]["name"])
        self.assertEqual(user, AGENT)
        (cond,) = self.policy["spec"]["matchConditions"]
        self.assertTrue(cel(cond["expression"], node_request(AGENT, "gpu-node-01")))
        self.assertFalse(cel(cond["expression"], node_request("system:node:gpu-node-01",
                                                              "gpu-node-01")))

    def test_own_node_allowed_any_other_denied(self):
        (v,) = self.policy["spec"]["validations"]
        expr = v["expression"]
        self.assertIn("request.userInfo.extra['authentication.kubernetes.io/node-name']", expr)
        own = node_request(AGENT, "gpu-node-01", node_name_claim="gpu-node-01")
        other = node_request(AGENT, "gpu-node-02", node_name_claim="gpu-node-01")
        no_claim = node_request(AGENT, "gpu-node-01")  # a token without the node: not admitted
        delete = node_request(AGENT, "gpu-node-01", "DELETE", node_name_claim="gpu-node-01")
        self.assertIs(cel(expr, own), True)
        self.assertIs(cel(expr, other), False)
        self.assertIn(cel(expr, no_claim), (False, None))  # None: failurePolicy Fail denies
        self.assertIs(cel(expr, delete), False)


class DaemonSetTest(unittest.TestCase):
    """The image itself (non-root user, no shell): tests/image/image_test.py."""

    def test_daemonset_says_why_it_runs_as_root(self):
        (ds,) = [d for d in load("agent", "daemonset.yaml") if d["kind"] == "DaemonSet"]
        (agent,) = [c for c in ds["spec"]["template"]["spec"]["containers"]
                    if c["name"] == "agent"]
        sc = agent["securityContext"]
        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertFalse(sc["allowPrivilegeEscalation"])
        with open(os.path.join(DEPLOY, "agent", "daemonset.yaml")) as f:
            text = f.read()
        self.assertIn("debugfs", text)  # the one reason for uid 0


if __name__ == "__main__":
    unittest.main()
