#!/usr/bin/env python3
"""The agent's fabric facts on the real control plane (issue 18).

The node annotation tocsin.io/fabric goes through nodes/<name>/status, the one write the agent's
default RBAC (deploy/agent/rbac.yaml) grants: the status strategy of the node registry
(pkg/registry/core/node/strategy.go, nodeStatusStrategy.PrepareForUpdate) resets only the spec,
so metadata patched there is kept. Checked here first with the agent's own token and a bare
PATCH, then end to end: the agent on a fixture node publishes, `tocsin snapshot` holds the facts,
a firmware update is published again, and `tocsin diff` of the two snapshots reports
drift.node.firmware.

    TOCSIN_K8S_ENV=build/k8s/env python3 tests/k8s/fabric_facts_test.py -v
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import (SOURCE, ClusterTestCase, load_env, no_skip, run_tocsin,  # noqa: E402
                     tocsin_binary)

ANNOTATION = "tocsin.io/fabric"
NODE = "gpu-node-01"
SMP = "application/strategic-merge-patch+json"


class FabricFactsTest(ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        cls.tmp = tempfile.mkdtemp(prefix="tocsin-facts-")
        if c.kubectl("get", "namespace", "tocsin", check=False).returncode != 0:
            c.kubectl("create", "namespace", "tocsin")
        c.kubectl("apply", "-f", os.path.join(SOURCE, "deploy", "agent", "rbac.yaml"))
        cls.token = c.service_account_token("tocsin", "tocsin-agent")

    @classmethod
    def tearDownClass(cls):
        for node in (NODE, "gpu-node-02"):
            cls.cluster.kubectl("annotate", "node", node, ANNOTATION + "-",
                                "tocsin.io/probe-", check=False)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def annotations(self, node):
        return self.cluster.get("node", node)["metadata"].get("annotations") or {}

    def test_status_subresource_keeps_annotations(self):
        """What the design rests on: with only `patch nodes/status`, a strategic merge patch of
        metadata.annotations through the status subresource is kept (the answer and a later read
        hold it), and the same patch of the node itself is refused."""
        c = self.cluster
        patch = {"metadata": {"annotations": {"tocsin.io/probe": "kept"}}}
        node = c.api("PATCH", "/api/v1/nodes/gpu-node-02/status", patch, token=self.token,
                     content_type=SMP)
        self.assertEqual(node["metadata"]["annotations"].get("tocsin.io/probe"), "kept")
        self.assertEqual(self.annotations("gpu-node-02").get("tocsin.io/probe"), "kept")
        self.assertEqual(c.status_of("PATCH", "/api/v1/nodes/gpu-node-02", patch,
                                     token=self.token, content_type=SMP), 403)
        # The spec, by contrast, is not changed through the status subresource.
        node = c.api("PATCH", "/api/v1/nodes/gpu-node-02/status",
                     {"spec": {"unschedulable": True}}, token=self.token, content_type=SMP)
        self.assertFalse(node["spec"].get("unschedulable", False))

    def test_agent_publishes_snapshot_holds_and_diff_sees_a_firmware_update(self):
        c = self.cluster
        root = os.path.join(self.tmp, "node")
        shutil.copytree(os.path.join(SOURCE, "testdata", "nodes", "ib-healthy"), root,
                        symlinks=True)
        c.kubectl("annotate", "node", NODE, ANNOTATION + "-", check=False)
        kc = c.token_kubeconfig(os.path.join(self.tmp, "agent.kubeconfig"), self.token)
        err_path = os.path.join(self.tmp, "agent.err")
        with open(err_path, "w") as err:
            agent = subprocess.Popen(
                [tocsin_binary(), "agent", "--root", root, "--listen", "127.0.0.1:0",
                 "--kubeconfig", kc, "--reconcile", "200ms", "--no-pod-resources"],
                env=dict(os.environ, NODE_NAME=NODE, KUBECONFIG=""),
                stdout=subprocess.DEVNULL, stderr=err)
        try:
            def facts(fw=None):
                text = self.annotations(NODE).get(ANNOTATION)
                if not text:
                    return None
                f = json.loads(text)
                return f if fw is None or f["hcas"][0]["fw"] == fw else None
            f = c.wait_for(facts, 60, "the agent's fabric facts on " + NODE)
            self.assertEqual(f["v"], 1)
            self.assertEqual(f["driver"], "24.10-0.7.0")
            self.assertEqual([h["name"] for h in f["hcas"]], ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"])
            self.assertEqual(f["hcas"][0], {"name": "mlx5_0", "fw": "28.39.1002",
                                            "board_id": "MT_0000000838",
                                            "link_layer": "InfiniBand",
                                            "rate": "400 Gb/sec (4X NDR)", "mtu": ""})
            before = self.snapshot("before.json")
            held = [n for n in before["items"]
                    if n.get("kind") == "Node" and n["metadata"]["name"] == NODE]
            self.assertEqual(len(held), 1)
            self.assertEqual(json.loads(held[0]["metadata"]["annotations"][ANNOTATION]), f)

            # A firmware update on every HCA: published again at the next rdma run.
            for i in range(4):
                with open(os.path.join(root, "sys", "class", "infiniband", f"mlx5_{i}",
                                       "fw_ver"), "w") as fw:
                    fw.write("28.40.1000\n")
            agent.send_signal(signal.SIGHUP)
            c.wait_for(lambda: facts("28.40.1000"), 60, "the updated firmware on " + NODE)
            self.snapshot("after.json")

            # Each node its own class (the other nodes publish nothing): the firmware drifted.
            r = run_tocsin("diff", os.path.join(self.tmp, "before.json"),
                           os.path.join(self.tmp, "after.json"),
                           "--class-label", "kubernetes.io/hostname", "-o", "json")
            self.assertIn(r.returncode, (0, 1), r.stderr)
            report = json.loads(r.stdout)
            fw = [x for x in report["findings"] if x["check"] == "drift.node.firmware"]
            self.assertEqual(len(fw), 1, json.dumps(report["findings"], indent=1))
            self.assertEqual(fw[0]["severity"], "warning")
            self.assertIn(NODE, fw[0]["subject"] + fw[0]["message"])
            self.assertIn("28.39.1002", json.dumps(fw[0]))
            self.assertIn("28.40.1000", json.dumps(fw[0]))
            others = [x for x in report["findings"] if x["check"].startswith("drift.node.")
                      and x["check"] != "drift.node.firmware"]
            self.assertEqual(others, [])
        finally:
            agent.terminate()
            try:
                agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
                self.fail("the agent did not stop within 10 s of SIGTERM")
        with open(err_path) as err:
            log = err.read()
        self.assertEqual(agent.returncode, 0, log)
        self.assertNotIn("HTTP 403", log)
        self.assertNotIn("answered without the annotation", log)

    def snapshot(self, name):
        path = os.path.join(self.tmp, name)
        r = run_tocsin("snapshot", "--kubeconfig", self.cluster.kubeconfig, "--no-pods",
                       "--out", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            return json.load(f)


if __name__ == "__main__":
    if load_env()[0] is None:
        print("SKIPPED:", load_env()[1])
        sys.exit(1 if no_skip() else 77)
    unittest.main(verbosity=2)
