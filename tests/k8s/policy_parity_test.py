#!/usr/bin/env python3
"""`tocsin policy`'s CEL says what `tocsin audit` says: every job fixture (testdata/jobs/*.yaml:
the audit fixtures' jobs as submitted, other bad jobs, and known-good templates for InfiniBand,
RoCE, SR-IOV, EFA, NVIDIA host devices, GPUDirect-TCPX) is evaluated by the generated
ValidatingAdmissionPolicies (npm @bufbuild/cel, offline, through tests/k8s/policy_eval.cjs) and
audited by `tocsin audit --from CLUSTER --from JOB`, under several params; the sets of check ids
must be equal, every message must start with its id, no expression may fail to evaluate, and the
known-good templates must draw no warning.

    python3 tests/k8s/policy_parity_test.py -v     (TOCSIN_BINARY: default build/test/tocsin)

Needs python3-yaml, and Node.js with @bufbuild/cel (tools/deps.sh installs both).
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import yaml
except ImportError:  # python3-yaml (Debian) or PyYAML
    sys.exit("policy_parity_test: needs python3-yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOCSIN = os.environ.get("TOCSIN_BINARY", os.path.join(ROOT, "build", "test", "tocsin"))
JOBS = os.path.join(ROOT, "testdata", "jobs")
CLUSTERS = os.path.join(ROOT, "testdata", "clusters")
NPM_DIR = os.environ.get("TOCSIN_NPM_DIR", "/var/cache/tocsin/npm")
EVAL = os.path.join(ROOT, "tests", "k8s", "policy_eval.cjs")
VALIDATE = os.path.join(ROOT, "tests", "k8s", "validate_models.mjs")
NOW = "2026-11-29T00:00:00Z"

# The params each variant runs with: (cluster fixture, flags for both `audit` and `policy`).
VARIANTS = {
    "healthy": ("healthy.json", []),
    "healthy+network": ("healthy.json", ["--fabric-network", "rdma-net"]),
    "healthy+no-ipc-lock": ("healthy.json", ["--fabric-network", "rdma-net",
                                             "--ipc-lock-not-needed"]),
    "sriov+network": ("sriov.json", ["--fabric-network", "rdma-net"]),
    "aws-topology": ("healthy.json", ["--topology-label", "topology.k8s.aws/network-node-layer-1"]),
    "extra-resource": ("healthy.json", ["--rdma-resource", "example.com/roce",
                                        "--topology-label", "kubernetes.io/os"]),
}

# Known-good templates and the variant of the cluster they are written for: no warning there.
GOOD = {
    "good-pytorchjob-ib.yaml": "healthy+network",
    "good-mpijob-ib.yaml": "healthy+network",
    "good-jobset-ib-exclusive.yaml": "healthy+network",
    "good-job-indexed-roce.yaml": "healthy+network",
    "good-pytorchjob-sriov.yaml": "sriov+network",
    "good-job-efa.yaml": "aws-topology",
    "good-jobset-tcpx.yaml": "healthy",
    "good-trainjob-ib.yaml": "healthy+network",
    "good-job-single-node.yaml": "healthy+network",
    "good-pytorchjob-kueue-topology.yaml": "healthy+network",
    "good-mpijob-hostdev.yaml": "healthy+network",
    "good-job-no-ipc-lock-platform.yaml": "healthy+no-ipc-lock",
}

# What the bad ones must draw in their variant (the parity alone would pass if both said nothing).
BAD = {
    "bad-pytorchjob-no-rdma.yaml": ("healthy+network", {"job.rdma.not-requested"}),
    "bad-job-ib-disabled.yaml": ("healthy+network", {
        "job.nccl.fallback-env", "job.rdma.no-network", "job.rdma.no-ipc-lock",
        "job.rdma.hostpath-devices", "job.placement.no-topology"}),
    "bad-jobset-socket.yaml": ("healthy+network", {"job.nccl.fallback-env"}),
    "bad-mpijob-no-network.yaml": ("healthy+network", {"job.rdma.no-network"}),
    "bad-trainjob-no-rdma.yaml": ("healthy+network", {"job.rdma.not-requested"}),
    "bad-job-world-size.yaml": ("healthy+network", {
        "job.rdma.not-requested", "job.nccl.fallback-env", "job.placement.no-topology"}),
    "bad-pytorchjob-dev-hostpath.yaml": ("healthy+network", {"job.rdma.hostpath-devices"}),
}

JOB_LABELS = ("training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name",
              "batch.kubernetes.io/job-name", "job-name")


def job_key(obj):
    """The subject the audit gives the job (src/audit/jobs.cc, TemplateKey)."""
    kind, ns, name = obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
    if kind == "Job":
        return "job/%s/%s" % (ns, name)
    if kind in ("JobSet", "TrainJob"):
        return "jobset/%s/%s" % (ns, name)
    return "kubeflow/%s/%s" % (ns, name)


def run(args, **kw):
    r = subprocess.run([TOCSIN] + args, capture_output=True, text=True, timeout=120, **kw)
    if r.returncode not in (0, 1):
        raise AssertionError("tocsin %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


class PolicyParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(TOCSIN, os.X_OK):
            raise AssertionError("no tocsin binary at %s (TOCSIN_BINARY)" % TOCSIN)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.fixtures = {}
        for path in sorted(glob.glob(os.path.join(JOBS, "*.yaml"))):
            with open(path) as f:
                cls.fixtures[os.path.basename(path)] = (path, yaml.safe_load(f))
        # The clusters without their jobs' pods: each fixture job is judged by its templates.
        cls.clusters = {}
        for name in {c for c, _ in VARIANTS.values()}:
            with open(os.path.join(CLUSTERS, name)) as f:
                snap = json.load(f)
            snap["items"] = [o for o in snap["items"] if not (
                o["kind"] == "Pod" and
                any(k in o["metadata"].get("labels", {}) for k in JOB_LABELS))]
            out = os.path.join(cls.tmp.name, name)
            with open(out, "w") as f:
                json.dump(snap, f)
            cls.clusters[name] = out
        cls.policy_ids = None
        cls.manifests = {}
        cls.results = {}  # (variant, fixture) -> (audit ids, policy warnings, errors)
        for variant, (cluster, flags) in VARIANTS.items():
            docs = [d for d in yaml.safe_load_all(run(["policy", "--from", cls.clusters[cluster]]
                                                       + flags)) if d]
            cls.manifests[variant] = docs
            params = docs[0]
            policies = [{"check": p["metadata"]["annotations"]["tocsin.io/check"],
                         "variables": p["spec"]["variables"],
                         "expression": p["spec"]["validations"][0]["expression"],
                         "messageExpression": p["spec"]["validations"][0]["messageExpression"]}
                        for p in docs if p["kind"] == "ValidatingAdmissionPolicy"]
            cls.policy_ids = {p["check"] for p in policies}
            cases = [{"name": f, "object": obj, "params": params}
                     for f, (_, obj) in cls.fixtures.items()]
            r = subprocess.run(["node", EVAL], input=json.dumps(
                {"policies": policies, "cases": cases}), capture_output=True, text=True,
                timeout=120, env=dict(os.environ,
                                      NODE_PATH=os.path.join(NPM_DIR, "node_modules")))
            if r.returncode != 0:
                raise AssertionError("policy_eval.cjs failed (is @bufbuild/cel installed? make "
                                     "test runs tools/deps.sh): " + r.stderr)
            evaluated = json.loads(r.stdout)["results"]
            # One audit of every fixture job at once: their subjects differ.
            args = ["audit", "--from", cls.clusters[cluster], "--now", NOW, "-o", "json"]
            for path, _ in cls.fixtures.values():
                args += ["--from", path]
            findings = json.loads(run(args + flags))["findings"]
            for f, (_, obj) in cls.fixtures.items():
                audit = {x["check"] for x in findings
                         if x["subject"] == job_key(obj) and x["check"] in cls.policy_ids}
                cls.results[(variant, f)] = (audit, evaluated[f]["warnings"],
                                             evaluated[f]["errors"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_enough_fixtures(self):
        self.assertGreaterEqual(len([f for f in self.fixtures if f.startswith("good-")]), 10)
        self.assertEqual(set(GOOD) | set(BAD), set(self.fixtures))
        self.assertEqual({o["kind"] for _, o in self.fixtures.values()},
                         {"Job", "JobSet", "PyTorchJob", "MPIJob", "TrainJob"})

    def test_manifests_pass_the_kubernetes_schemas(self):
        # kubernetes-models' admissionregistration.k8s.io/v1 schemas: no API server >= 1.30 here.
        docs = self.manifests["healthy+network"]
        self.assertEqual([d["kind"] for d in docs[:3]],
                         ["ConfigMap", "ValidatingAdmissionPolicy",
                          "ValidatingAdmissionPolicyBinding"])
        r = subprocess.run(["node", VALIDATE], input=json.dumps(docs), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for d in docs[1:]:
            self.assertEqual(d["apiVersion"], "admissionregistration.k8s.io/v1")
            if d["kind"] == "ValidatingAdmissionPolicyBinding":
                self.assertEqual(d["spec"]["validationActions"], ["Warn", "Audit"])
            else:
                self.assertEqual(d["spec"]["failurePolicy"], "Ignore")

    def test_policy_ids_are_the_audits_job_checks(self):
        self.assertEqual(self.policy_ids, {
            "job.rdma.not-requested", "job.nccl.fallback-env", "job.rdma.no-network",
            "job.rdma.no-ipc-lock", "job.rdma.hostpath-devices", "job.placement.no-topology"})

    def test_cel_evaluates_without_errors(self):
        for (variant, f), (_, _, errors) in sorted(self.results.items()):
            self.assertEqual(errors, [], "%s under %s" % (f, variant))

    def test_same_ids_as_the_audit(self):
        for (variant, f), (audit, warnings, _) in sorted(self.results.items()):
            with self.subTest(fixture=f, variant=variant):
                self.assertEqual({w["check"] for w in warnings}, audit)
                for w in warnings:
                    self.assertTrue(w["message"].startswith(w["check"] + ": "), w["message"])

    def test_known_good_templates_draw_nothing(self):
        for f, variant in GOOD.items():
            audit, warnings, _ = self.results[(variant, f)]
            self.assertEqual((audit, warnings), (set(), []), "%s under %s" % (f, variant))

    def test_bad_jobs_draw_their_checks(self):
        for f, (variant, expected) in BAD.items():
            audit, warnings, _ = self.results[(variant, f)]
            self.assertEqual(audit, expected, f)


if __name__ == "__main__":
    unittest.main()
