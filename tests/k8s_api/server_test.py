#!/usr/bin/env python3
"""Tests of the test API server itself: pagination, selectors, watch, auth, faults."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTERS = os.path.join(HERE, "..", "..", "testdata", "clusters")


class Server:
    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "server.py"), "--max-seconds", "60",
             "--snapshot", os.path.join(CLUSTERS, "plugin-crashloop.json"), *args],
            stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.base = "http://127.0.0.1:%d" % int(line.split()[1])

    def get(self, path, headers=None):
        req = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def send(self, method, path, body, content_type="application/json"):
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                     method=method, headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read().decode())

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


class ServerTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()

    def tearDown(self):
        self.server.close()

    def test_pagination_walks_every_item_once(self):
        names, path, pages = [], "/api/v1/pods?limit=2", 0
        while True:
            code, body = self.server.get(path)
            self.assertEqual(code, 200)
            doc = json.loads(body)
            self.assertEqual(doc["kind"], "PodList")
            names += [p["metadata"]["name"] for p in doc["items"]]
            pages += 1
            cont = doc["metadata"].get("continue")
            if not cont:
                break
            path = "/api/v1/pods?limit=2&continue=" + urllib.request.quote(cont, safe="")
        self.assertEqual(pages, 2)
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(len(names), len(json.loads(self.server.get("/api/v1/pods")[1])["items"]))

    def test_status_patch_merges_conditions_by_type_and_events_are_created(self):
        name = json.loads(self.server.get("/api/v1/nodes")[1])["items"][0]["metadata"]["name"]
        smp = "application/strategic-merge-patch+json"
        before = json.loads(self.server.get("/api/v1/nodes/" + name)[1])
        theirs = [c["type"] for c in before["status"].get("conditions", [])]
        cond = {"type": "RDMAFabricDegraded", "status": "True", "reason": "RdmaPortDown"}
        code, node = self.server.send("PATCH", "/api/v1/nodes/%s/status" % name,
                                      {"status": {"conditions": [cond]}}, smp)
        self.assertEqual(code, 200)
        code, node = self.server.send("PATCH", "/api/v1/nodes/%s/status" % name,
                                      {"status": {"conditions": [dict(cond, status="False")]}},
                                      smp)
        types = [c["type"] for c in node["status"]["conditions"]]
        self.assertEqual(types, theirs + ["RDMAFabricDegraded"])  # merged, others kept
        self.assertEqual(node["status"]["conditions"][-1]["status"], "False")
        self.assertEqual(self.server.send("PATCH", "/api/v1/nodes/%s/status" % name, {})[0], 415)
        # The node itself: a stale resourceVersion conflicts.
        code, _ = self.server.send("PATCH", "/api/v1/nodes/" + name,
                                   {"metadata": {"resourceVersion": "1"}, "spec": {}}, smp)
        self.assertEqual(code, 409)
        event = {"kind": "Event", "apiVersion": "v1", "metadata": {"generateName": name + "."},
                 "involvedObject": {"kind": "Node", "name": name}, "reason": "RdmaPortDown"}
        code, created = self.server.send("POST", "/api/v1/namespaces/default/events", event)
        self.assertEqual(code, 201)
        self.assertTrue(created["metadata"]["name"].startswith(name + "."))
        events = json.loads(self.server.get("/api/v1/namespaces/default/events")[1])["items"]
        self.assertEqual([e["reason"] for e in events], ["RdmaPortDown"])
        self.assertEqual(self.server.send("POST", "/api/v1/namespaces/default/events",
                                          {"kind": "Event"})[0], 422)

    def test_selectors_and_single_objects(self):
        code, body = self.server.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-01")
        items = json.loads(body)["items"]
        self.assertTrue(items)
        self.assertTrue(all(p["spec"]["nodeName"] == "gpu-node-01" for p in items))
        code, body = self.server.get("/api/v1/nodes/gpu-node-02")
        self.assertEqual((code, json.loads(body)["metadata"]["name"]), (200, "gpu-node-02"))
        code, body = self.server.get("/api/v1/nodes/nope")
        self.assertEqual((code, json.loads(body)["reason"]), (404, "NotFound"))
        code, body = self.server.get("/apis/apps/v1/namespaces/kube-system/daemonsets")
        self.assertEqual(len(json.loads(body)["items"]), 1)

    def test_watch_sends_added_events_then_ends(self):
        code, body = self.server.get("/api/v1/nodes?watch=true&timeoutSeconds=0")
        self.assertEqual(code, 200)
        events = [json.loads(l) for l in body.splitlines() if l]
        self.assertEqual({e["type"] for e in events}, {"ADDED"})
        self.assertEqual(len(events), 4)
        # From a list's resourceVersion nothing changed: no events.
        code, body = self.server.get("/api/v1/nodes?watch=1&resourceVersion=1000&timeoutSeconds=0")
        self.assertEqual((code, body.strip()), (200, ""))

    def test_tables_for_kubectl(self):
        accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        code, body = self.server.get("/api/v1/pods", {"Accept": accept})
        doc = json.loads(body)
        self.assertEqual(doc["kind"], "Table")
        self.assertEqual(doc["rows"][0]["cells"][2], "CrashLoopBackOff")
        self.assertEqual(doc["rows"][0]["object"]["metadata"]["namespace"], "kube-system")


class FaultTest(unittest.TestCase):
    def test_auth_and_faults(self):
        s = Server("--token", "secret", "--fail-first", "1", "--forbid", "daemonsets",
                   "--expire-continue")
        try:
            self.assertEqual(s.get("/api/v1/nodes")[0], 401)
            auth = {"Authorization": "Bearer secret"}
            self.assertEqual(s.get("/api/v1/nodes", auth)[0], 503)
            self.assertEqual(s.get("/api/v1/nodes", auth)[0], 200)
            code, body = s.get("/apis/apps/v1/daemonsets", auth)
            self.assertEqual(code, 403)
            self.assertIn("forbidden", json.loads(body)["message"])
            cont = json.loads(s.get("/api/v1/pods?limit=1", auth)[1])["metadata"]["continue"]
            path = "/api/v1/pods?limit=1&continue=" + urllib.request.quote(cont, safe="")
            self.assertEqual(s.get(path, auth)[0], 410)
            self.assertEqual(s.get(path, auth)[0], 200)
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main()
