#!/usr/bin/env python3
"""The controller's admission webhook on the real control plane (Kubernetes 1.20: admission
webhooks, no ValidatingAdmissionPolicy): registered by URL with its CA, `kubectl apply` of a bad
Job prints the audit's warning, a good one prints none; 1,000 reviews on loopback each answer
within the manifest's timeoutSeconds (their p50/p99 printed); a rotated certificate is served without a restart; with the webhook down
the API server keeps admitting (failurePolicy Ignore).

    TOCSIN_K8S_ENV=build/k8s/env python3 tests/k8s/admission_webhook_test.py -v
"""
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import SOURCE, Cluster, ClusterTestCase, run_tocsin  # noqa: E402
from controller_process import ControllerProcess  # noqa: E402

NS = "tt-admission"
JOBS = os.path.join(SOURCE, "testdata", "jobs")


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_pair(d, name, ca):
    """A serving certificate for 127.0.0.1 signed by the CA in d (ca.crt, ca.key)."""
    key, csr, crt = (os.path.join(d, name + ext) for ext in (".key", ".csr", ".crt"))
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
            "-subj", "/CN=" + name)
    openssl("x509", "-req", "-in", csr, "-CA", ca + ".crt", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext)
    return crt, key


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job(name, fixture):
    with open(os.path.join(JOBS, fixture)) as f:
        obj = yaml.safe_load(f)
    obj["metadata"] = {"name": name, "namespace": NS}
    # Indexed Jobs are 1.21+: this control plane is 1.20 (the webhook does not read them).
    for key in ("completionMode", "completions"):
        obj["spec"].pop(key, None)
    return json.dumps(obj)


class AdmissionWebhookTest(ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        ca = os.path.join(d, "ca")
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca + ".key",
                "-out", ca + ".crt", "-days", "2", "-subj", "/CN=tocsin-test-ca")
        cls.ca = ca
        cls.crt, cls.key = make_pair(d, "webhook-1", ca)
        cls.serving_crt = os.path.join(d, "tls.crt")
        cls.serving_key = os.path.join(d, "tls.key")
        os.replace(cls.crt, cls.serving_crt)
        os.replace(cls.key, cls.serving_key)
        cls.port = free_port()
        c.namespace(NS)
        c.kubectl("label", "namespace", NS, "tocsin-test=admission")
        cls.controller = ControllerProcess(
            c.kubeconfig, "--admission-listen", "127.0.0.1:%d" % cls.port,
            "--tls-cert-file", cls.serving_crt, "--tls-private-key-file", cls.serving_key,
            "--fabric-network", "rdma-net")
        with open(ca + ".crt", "rb") as f:
            import base64
            bundle = base64.b64encode(f.read()).decode()
        cls.webhook = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "tocsin-test-job-checks"},
            "webhooks": [{
                "name": "jobs.tocsin.io", "admissionReviewVersions": ["v1"],
                "sideEffects": "None", "failurePolicy": "Ignore", "timeoutSeconds": 2,
                "clientConfig": {"url": "https://127.0.0.1:%d/validate" % cls.port,
                                 "caBundle": bundle},
                "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"],
                           "operations": ["CREATE"], "resources": ["jobs"]}],
                "namespaceSelector": {"matchLabels": {"tocsin-test": "admission"}}}]}
        c.kubectl("apply", "-f", "-", stdin=json.dumps(cls.webhook))
        Cluster.wait_for(cls._answers, 30, "the webhook to answer over TLS")

    @classmethod
    def tearDownClass(cls):
        c = cls.cluster
        c.kubectl("delete", "validatingwebhookconfiguration", "tocsin-test-job-checks",
                  "--ignore-not-found", check=False)
        if getattr(cls, "controller", None):
            cls.controller.stop()
        c.kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=false", check=False)
        cls.tmp.cleanup()

    @classmethod
    def _context(cls):
        ctx = ssl.create_default_context(cafile=cls.ca + ".crt")
        return ctx

    @classmethod
    def _answers(cls):
        try:
            return cls._review(job("probe", "good-job-single-node.yaml"))[0] == 200
        except OSError:
            return False

    @classmethod
    def _review(cls, object_json, conn=None):
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": {"uid": "u", "kind": {"group": "batch", "version": "v1",
                                                            "kind": "Job"},
                                       "operation": "CREATE", "object": json.loads(object_json)}})
        own = conn is None
        if own:
            conn = http.client.HTTPSConnection("127.0.0.1", cls.port, timeout=5,
                                               context=cls._context())
        conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if own:
            conn.close()
        return r.status, data

    def apply(self, name, fixture):
        return self.cluster.kubectl("apply", "--dry-run=server", "-f", "-",
                                    stdin=job(name, fixture), check=False)

    def test_1_bad_job_prints_the_warning(self):
        r = self.apply("bad", "bad-job-world-size.yaml")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Warning: job.rdma.not-requested: Job bad:", r.stderr)
        self.assertIn("job.nccl.fallback-env", r.stderr)
        r = self.apply("ib-off", "bad-job-ib-disabled.yaml")
        self.assertIn("Warning: job.rdma.no-network", r.stderr)

    def test_2_good_job_prints_nothing(self):
        for fixture in ("good-job-indexed-roce.yaml", "good-job-single-node.yaml"):
            r = self.apply("good", fixture)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("Warning", r.stderr, fixture)

    def test_3_latency_p99_over_1000_reviews(self):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=5,
                                           context=self._context())
        bad = job("bad", "bad-job-ib-disabled.yaml")
        times = []
        for _ in range(1000):
            t = time.perf_counter()
            status, data = self._review(bad, conn)
            times.append(time.perf_counter() - t)
            self.assertEqual(status, 200)
        conn.close()
        times.sort()
        p50, p99 = times[499] * 1000, times[989] * 1000
        print("\nwebhook latency over 1000 reviews (keep-alive, TLS): p50 %.2f ms, p99 %.2f ms, "
              "max %.2f ms" % (p50, p99, times[-1] * 1000), file=sys.stderr)
        # Latency is a figure (printed; the goal is judged in docs/BENCHMARKS.md on an idle
        # machine), not a test; what is tested is the manifest's contract: every review answered
        # within its timeoutSeconds (2 s), after which the API server would admit without it.
        self.assertLess(times[-1], 2.0)
        self.assertGreaterEqual(self.controller.value(
            "tocsin_controller_admission_requests_total", result="warned"), 1000)

    def test_4_rotated_certificate_is_served(self):
        def served():
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                ctx = ssl.create_default_context(cafile=self.ca + ".crt")
                with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                    return dict(x[0] for x in t.getpeercert()["subject"])["commonName"]
        self.assertEqual(served(), "webhook-1")
        crt, key = make_pair(self.tmp.name, "webhook-2", self.ca)
        os.replace(key, self.serving_key)  # one file after the other, as a Secret update may
        os.replace(crt, self.serving_crt)
        Cluster.wait_for(lambda: served() == "webhook-2", 10, "the rotated certificate")
        r = self.apply("bad2", "bad-job-world-size.yaml")
        self.assertIn("Warning: job.rdma.not-requested", r.stderr)

    def test_5_webhook_down_keeps_admitting(self):
        self.controller.stop()
        self.__class__.controller = None
        t = time.monotonic()
        r = self.apply("while-down", "bad-job-world-size.yaml")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("Warning: job.", r.stderr)
        self.assertLess(time.monotonic() - t, 10)


class PolicyParamsTest(ClusterTestCase):
    """`tocsin controller --policy-params NS/NAME` keeps `tocsin policy`'s params ConfigMap
    current: the RDMA resources the nodes really advertise, written by a merge patch."""

    def test_controller_writes_what_the_nodes_advertise(self):
        c = self.cluster
        ns = "tt-policy-params"
        c.namespace(ns)
        try:
            out = run_tocsin("policy", "--params-namespace", ns)
            self.assertEqual(out.returncode, 0, out.stderr)
            [cm] = [d for d in yaml.safe_load_all(out.stdout) if d and d["kind"] == "ConfigMap"]
            cm["data"]["advertisedRdmaResources"] = "rdma/stale"  # as written at install
            c.kubectl("apply", "-f", "-", stdin=json.dumps(cm))
            nodes = json.loads(c.kubectl("get", "nodes", "-o", "json").stdout)["items"]
            advertised = sorted({k for n in nodes
                                 for k, v in n["status"].get("allocatable", {}).items()
                                 if k.startswith("rdma/") and v != "0"})
            self.assertTrue(advertised, "the test cluster's fabric nodes advertise RDMA")
            ctl = ControllerProcess(c.kubeconfig, "--policy-params",
                                    f"{ns}/tocsin-policy-params", identity="params")
            try:
                def written():
                    got = json.loads(c.kubectl("get", "configmap", "-n", ns,
                                               "tocsin-policy-params", "-o", "json").stdout)
                    return got["data"]["advertisedRdmaResources"] == ",".join(advertised)
                Cluster.wait_for(written, 60, "the params ConfigMap to name what nodes advertise")
                Cluster.wait_for(lambda: ctl.value("tocsin_controller_policy_params_synced") == 1,
                                 30, "the synced metric")
                self.assertEqual(ctl.value("tocsin_controller_policy_params_writes_total",
                                           result="error"), 0)
            finally:
                ctl.stop()
        finally:
            c.kubectl("delete", "namespace", ns, "--wait=false", check=False)


if __name__ == "__main__":
    unittest.main()
