#!/usr/bin/env python3
"""deploy/controller: it renders with kustomize (as part of deploy/base and its overlays) and
grants exactly the rights `tocsin controller` uses, each rule explained; the Deployment runs two
replicas, one leading, as the README describes; every alert has a firing and a quiet test.

    python3 tests/k8s/controller_manifests_test.py -v

Needs kubectl (its built-in kustomize; no cluster) and python3-yaml.
"""

import os
import subprocess
import sys
import unittest

try:
    import yaml
except ImportError:  # python3-yaml (Debian) or PyYAML
    sys.exit("controller_manifests_test: needs python3-yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy", "controller")
SA = ("tocsin-controller", "tocsin")

# Every right the controller has: (role, apiGroup, resource, verb, resourceName or "*").
# Adding or removing one is a change of this test, on purpose.
READ = ("get", "list", "watch")
EXPECTED_RIGHTS = {
    ("ClusterRole/tocsin-controller", group, resource, verb, "*")
    for group, resource in [("", "nodes"), ("", "pods"), ("apps", "daemonsets"),
                            ("batch", "jobs"), ("kubeflow.org", "pytorchjobs"),
                            ("kubeflow.org", "mpijobs"), ("jobset.x-k8s.io", "jobsets")]
    for verb in READ
} | {
    ("ClusterRole/tocsin-controller", "", "configmaps", "get", "*"),
    ("ClusterRole/tocsin-controller", "", "events", "create", "*"),
    ("ClusterRole/tocsin-controller", "", "events", "patch", "*"),
    ("Role/tocsin/tocsin-controller-lease", "coordination.k8s.io", "leases", "create", "*"),
    ("Role/tocsin/tocsin-controller-lease", "coordination.k8s.io", "leases", "get",
     "tocsin-controller"),
    ("Role/tocsin/tocsin-controller-lease", "coordination.k8s.io", "leases", "update",
     "tocsin-controller"),
}


def render():
    r = subprocess.run(["kubectl", "kustomize", DEPLOY], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise AssertionError("kubectl kustomize deploy/controller: " + r.stderr)
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def key(doc):
    meta = doc["metadata"]
    ns = meta.get("namespace")
    return "/".join([doc["kind"]] + ([ns] if ns else []) + [meta["name"]])


class ManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = {key(d): d for d in render()}

    def test_objects(self):
        self.assertEqual(set(self.docs), {
            "ServiceAccount/tocsin/tocsin-controller",
            "ClusterRole/tocsin-controller",
            "ClusterRoleBinding/tocsin-controller",
            "Role/tocsin/tocsin-controller-lease",
            "RoleBinding/tocsin/tocsin-controller-lease",
            "Deployment/tocsin/tocsin-controller",
            "PodDisruptionBudget/tocsin/tocsin-controller",
            "Service/tocsin/tocsin-controller",
        })

    def test_exactly_these_rights(self):
        granted = set()
        for k, doc in self.docs.items():
            if doc["kind"] not in ("ClusterRole", "Role"):
                continue
            for rule in doc["rules"]:
                self.assertNotIn("nonResourceURLs", rule, k)
            granted |= rights(k, doc)
        self.assertEqual(granted - EXPECTED_RIGHTS, set(), "rights granted beyond these")
        self.assertEqual(EXPECTED_RIGHTS - granted, set(), "rights missing")

    def test_bindings_give_the_roles_to_the_service_account(self):
        for binding, role in [("ClusterRoleBinding/tocsin-controller",
                               ("ClusterRole", "tocsin-controller")),
                              ("RoleBinding/tocsin/tocsin-controller-lease",
                               ("Role", "tocsin-controller-lease"))]:
            b = self.docs[binding]
            self.assertEqual((b["roleRef"]["kind"], b["roleRef"]["name"]), role)
            self.assertEqual([(s["kind"], s["name"], s["namespace"]) for s in b["subjects"]],
                             [("ServiceAccount",) + SA])

    def test_every_rule_is_explained(self):
        # A comment since the previous rule, as deploy/agent's rules have.
        with open(os.path.join(DEPLOY, "rbac.yaml")) as f:
            explained = False
            for line in f:
                if "#" in line:
                    explained = True
                if "verbs:" in line:
                    self.assertTrue(explained, "a rule without a comment: " + line.strip())
                    explained = False

    def test_deployment(self):
        d = self.docs["Deployment/tocsin/tocsin-controller"]
        self.assertEqual(d["spec"]["replicas"], 2)
        tmpl = d["spec"]["template"]
        labels = tmpl["metadata"]["labels"]
        self.assertEqual(d["spec"]["selector"]["matchLabels"], labels)
        self.assertEqual(tmpl["metadata"]["annotations"], {
            "prometheus.io/scrape": "true", "prometheus.io/port": "9465",
            "prometheus.io/path": "/metrics"})
        pod = tmpl["spec"]
        self.assertEqual(pod["serviceAccountName"], SA[0])
        self.assertEqual(pod["securityContext"]["runAsNonRoot"], True)
        self.assertEqual(pod["securityContext"]["runAsUser"], 65532)
        self.assertEqual(pod["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"})
        anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(anti[0]["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname")
        self.assertEqual(anti[0]["podAffinityTerm"]["labelSelector"]["matchLabels"], labels)
        self.assertEqual(len(pod["containers"]), 1)
        c = pod["containers"][0]
        self.assertEqual(c["args"], ["controller", "--leader-elect"])
        env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
        self.assertEqual(env, {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"})
        self.assertEqual(c["ports"], [{"name": "metrics", "containerPort": 9465, "protocol": "TCP"}])
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "metrics"})
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "metrics"})
        self.assertEqual(c["securityContext"], {"readOnlyRootFilesystem": True,
                                                "allowPrivilegeEscalation": False,
                                                "capabilities": {"drop": ["ALL"]}})
        self.assertIn("memory", c["resources"]["limits"])
        self.assertIn("cpu", c["resources"]["requests"])
        self.assertNotIn("volumeMounts", c)  # it reads nothing but the API
        self.assertFalse(pod.get("hostNetwork", False))

    def test_disruption_budget_and_service_select_the_replicas(self):
        labels = self.docs["Deployment/tocsin/tocsin-controller"]["spec"]["template"]["metadata"][
            "labels"]
        pdb = self.docs["PodDisruptionBudget/tocsin/tocsin-controller"]
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"], labels)
        svc = self.docs["Service/tocsin/tocsin-controller"]
        self.assertEqual(svc["spec"]["type"], "ClusterIP")
        self.assertEqual(svc["spec"]["selector"], labels)
        self.assertEqual(svc["spec"]["ports"], [{"name": "metrics", "port": 9465,
                                                 "targetPort": "metrics", "protocol": "TCP"}])


def rights(name, role):
    """{(name, apiGroup, resource, verb, resourceName or "*")} that a Role or ClusterRole grants."""
    return {(name, group, resource, verb, res_name)
            for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]
            for res_name in rule.get("resourceNames") or ["*"]}


# canary-rbac.yaml: what `--canary` adds, in the controller's namespace only.
CANARY_ROLE = "Role/tocsin/tocsin-controller-canary"
EXPECTED_CANARY_RIGHTS = {
    (CANARY_ROLE, "batch", "jobs", "create", "*"),
    (CANARY_ROLE, "batch", "jobs", "delete", "*"),
    (CANARY_ROLE, "", "configmaps", "create", "*"),
    (CANARY_ROLE, "", "configmaps", "get", "tocsin-canary"),
    (CANARY_ROLE, "", "configmaps", "update", "tocsin-canary"),
    (CANARY_ROLE, "", "secrets", "create", "*"),
    (CANARY_ROLE, "", "secrets", "get", "tocsin-canary-token"),
    (CANARY_ROLE, "", "events", "list", "*"),
}


class CanaryRbacTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "deploy", "components", "canary", "canary-rbac.yaml")) as f:
            cls.docs = {key(d): d for d in yaml.safe_load_all(f) if d}

    def test_exactly_these_rights_in_its_own_namespace(self):
        self.assertEqual(set(self.docs), {CANARY_ROLE, "RoleBinding/tocsin/tocsin-controller-canary",
                                          "PriorityClass/tocsin-canary"})
        self.assertEqual(rights(CANARY_ROLE, self.docs[CANARY_ROLE]), EXPECTED_CANARY_RIGHTS)
        b = self.docs["RoleBinding/tocsin/tocsin-controller-canary"]
        self.assertEqual(b["roleRef"]["name"], "tocsin-controller-canary")
        self.assertEqual([(s["kind"], s["name"], s["namespace"]) for s in b["subjects"]],
                         [("ServiceAccount",) + SA])

    def test_canaries_never_preempt(self):
        pc = self.docs["PriorityClass/tocsin-canary"]
        self.assertLess(pc["value"], 0)
        self.assertEqual(pc["preemptionPolicy"], "Never")
        self.assertFalse(pc["globalDefault"])


# drift-rbac.yaml: what `--drift-baseline` may add (opt-in: deploy/components/drift): list only,
# of the kinds the controller does not already watch.
DRIFT_ROLE = "ClusterRole/tocsin-controller-drift"
EXPECTED_DRIFT_RIGHTS = {
    (DRIFT_ROLE, "k8s.cni.cncf.io", "network-attachment-definitions", "list", "*"),
    (DRIFT_ROLE, "sriovnetwork.openshift.io", "sriovnetworknodepolicies", "list", "*"),
    (DRIFT_ROLE, "mellanox.com", "nicclusterpolicies", "list", "*"),
    (DRIFT_ROLE, "batch", "cronjobs", "list", "*"),
}


class DriftRbacTest(unittest.TestCase):
    def test_list_only_of_what_the_informers_do_not_hold_and_opt_in(self):
        with open(os.path.join(DEPLOY, "..", "components", "drift", "drift-rbac.yaml")) as f:
            docs = {key(d): d for d in yaml.safe_load_all(f) if d}
        self.assertEqual(set(docs), {DRIFT_ROLE, "ClusterRoleBinding/tocsin-controller-drift"})
        self.assertEqual(rights(DRIFT_ROLE, docs[DRIFT_ROLE]), EXPECTED_DRIFT_RIGHTS)
        b = docs["ClusterRoleBinding/tocsin-controller-drift"]
        self.assertEqual([(s["kind"], s["name"], s["namespace"]) for s in b["subjects"]],
                         [("ServiceAccount",) + SA])
        rendered = {key(d) for d in render()}
        self.assertNotIn(DRIFT_ROLE, rendered)  # opt-in: the install does not grant it


class AlertsTest(unittest.TestCase):
    """Every rule of alerts.yaml is scoped to the controller's job (firing and quiet tests of every
    alert, and their runbooks: deploy_kustomize_test.py's RulesTest)."""

    def test_every_rule_is_scoped_to_the_controllers_job(self):
        with open(os.path.join(DEPLOY, "alerts.yaml")) as f:
            rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        self.assertGreater(len(rules), 5)
        for r in rules:
            # Scoped to the controller's job: the agent exports tocsin_check_status too.
            self.assertIn('job="tocsin-controller"', r["expr"], r["alert"])


if __name__ == "__main__":
    unittest.main()
