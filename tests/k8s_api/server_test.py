#!/usr/bin/env python3
"""Tests of the test API server itself: pagination, selectors, watch, auth, faults."""
import base64
import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTERS = os.path.join(HERE, "..", "..", "testdata", "clusters")


class Server:
    def __init__(self, *args, snapshot=os.path.join(CLUSTERS, "plugin-crashloop.json")):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "server.py"), "--max-seconds", "60",
             "--snapshot", snapshot, *args],
            stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.port = int(line.split()[1])
        self.base = "http://127.0.0.1:%d" % self.port

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

    def control(self, name, body=None):
        if body is None and name in ("requests", "state"):
            return json.loads(self.get("/_control/" + name)[1])
        code, out = self.send("POST", "/_control/" + name, body or {})
        assert code == 200, (code, out)
        return out

    def list_rv(self, path="/api/v1/pods"):
        return int(json.loads(self.get(path)[1])["metadata"]["resourceVersion"])

    def watch(self, query, path="/api/v1/pods"):
        return Watch(self.port, path + "?watch=1&" + query)

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


class Watch:
    """A watch stream read by a thread, chunk by chunk off the socket: next() waits (bounded) for
    its next event; end() for how it ended: "clean" (the terminating zero-length chunk) or
    "dropped" (the connection broke without it)."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path.encode())
        self.f = self.sock.makefile("rb")
        self.status = int(self.f.readline().split()[1])
        while self.f.readline() not in (b"\r\n", b""):
            pass
        self.lines = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        try:
            pending = b""
            while True:
                size = self.f.readline()
                if not size.endswith(b"\r\n"):
                    return self.lines.put(("end", "dropped"))
                if int(size, 16) == 0:
                    self.f.readline()
                    return self.lines.put(("end", "clean"))
                data = self.f.read(int(size, 16) + 2)
                if len(data) != int(size, 16) + 2:
                    return self.lines.put(("end", "dropped"))
                pending += data[:-2]
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    self.lines.put(("event", json.loads(line)))
        except (OSError, ValueError):
            self.lines.put(("end", "dropped"))

    def next(self, timeout=10):
        kind, value = self.lines.get(timeout=timeout)
        assert kind == "event", "the stream ended (%s) before an event came" % value
        return value

    def until(self, want, timeout=10):
        """Events up to and including the first for which want(event) holds."""
        seen = []
        while True:
            seen.append(self.next(timeout))
            if want(seen[-1]):
                return seen

    def end(self, timeout=10):
        while True:
            kind, value = self.lines.get(timeout=timeout)
            if kind == "end":
                return value

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def pod(name, node="gpu-node-01", restarts=0):
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                        "labels": {"app": "t"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "c", "ready": True, "restartCount": restarts}]}}


def rv_of(event):
    return int(event["object"]["metadata"]["resourceVersion"])


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
        # Metadata through the status subresource is kept, the spec is not (strategy.go).
        code, node = self.server.send("PATCH", "/api/v1/nodes/%s/status" % name,
                                      {"metadata": {"annotations": {"tocsin.io/fabric": "{}"}},
                                       "spec": {"unschedulable": True}}, smp)
        self.assertEqual(node["metadata"]["annotations"]["tocsin.io/fabric"], "{}")
        self.assertNotIn("unschedulable", node["spec"])
        code, node = self.server.send("PATCH", "/api/v1/nodes/%s/status" % name,
                                      {"metadata": {"annotations": {"tocsin.io/fabric": None}}},
                                      smp)
        self.assertNotIn("tocsin.io/fabric", node["metadata"].get("annotations", {}))
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


class WatchTest(unittest.TestCase):
    """Watches as informers use them: from a list's resourceVersion, bookmarks, 410, drops."""

    def setUp(self):
        self.server = Server("--bookmark-seconds", "0.2", "--history", "50")
        self.watches = []

    def tearDown(self):
        for w in self.watches:
            w.close()
        self.server.close()

    def watch(self, query, path="/api/v1/pods"):
        w = self.server.watch(query, path)
        self.watches.append(w)
        return w

    def test_watch_from_the_list_sees_later_changes_with_higher_versions(self):
        rv = self.server.list_rv()
        objects = json.loads(self.server.get("/api/v1/pods")[1])["items"]
        self.assertTrue(all(int(o["metadata"]["resourceVersion"]) <= rv for o in objects))
        w = self.watch("resourceVersion=%d&timeoutSeconds=30" % rv)
        self.assertEqual(w.status, 200)
        self.server.control("apply", pod("p1"))
        added = w.next()
        self.assertEqual((added["type"], added["object"]["metadata"]["name"]), ("ADDED", "p1"))
        self.assertGreater(rv_of(added), rv)
        self.server.control("apply", pod("p1", restarts=3))
        modified = w.next()
        self.assertEqual(modified["type"], "MODIFIED")
        self.assertEqual(modified["object"]["status"]["containerStatuses"][0]["restartCount"], 3)
        self.assertGreater(rv_of(modified), rv_of(added))
        self.server.control("delete", {"kind": "Pod", "namespace": "default", "name": "p1"})
        deleted = w.next()
        self.assertEqual(deleted["type"], "DELETED")
        self.assertGreater(rv_of(deleted), rv_of(modified))
        # A watch resumed from the middle replays only what came after.
        again = self.watch("resourceVersion=%d&timeoutSeconds=30" % rv_of(added))
        self.assertEqual([e["type"] for e in (again.next(), again.next())],
                         ["MODIFIED", "DELETED"])
        # Lists report the current version; nodes did not change but share the global counter.
        self.assertEqual(self.server.list_rv("/api/v1/nodes"), rv_of(deleted))

    def test_selectors_turn_changes_into_added_and_deleted(self):
        rv = self.server.list_rv()
        w = self.watch("resourceVersion=%d&timeoutSeconds=30&fieldSelector=spec.nodeName%%3D"
                       "gpu-node-09" % rv)
        self.server.control("apply", pod("mover", node="gpu-node-08"))  # not seen
        self.server.control("apply", pod("mover", node="gpu-node-09"))
        self.server.control("apply", pod("mover", node="gpu-node-08"))
        first, second = w.next(), w.next()
        self.assertEqual((first["type"], second["type"]), ("ADDED", "DELETED"))
        self.assertEqual(second["object"]["spec"]["nodeName"], "gpu-node-09")  # the old object
        self.assertEqual(rv_of(second), rv + 3)  # at the change's version

    def test_bookmarks_carry_the_current_version(self):
        w = self.watch("resourceVersion=%d&timeoutSeconds=30&allowWatchBookmarks=true" %
                       self.server.list_rv())
        self.server.control("apply", pod("p1"))
        events = w.until(lambda e: e["type"] == "BOOKMARK")
        self.assertEqual(events[0]["type"], "ADDED")
        mark = events[-1]["object"]
        self.assertEqual((mark["kind"], mark["apiVersion"]), ("Pod", "v1"))
        self.assertEqual(int(mark["metadata"]["resourceVersion"]), rv_of(events[0]))
        self.assertEqual(w.next()["type"], "BOOKMARK")  # periodically
        # Without allowWatchBookmarks none come: the timeout ends it cleanly.
        quiet = self.watch("resourceVersion=%d&timeoutSeconds=1" % self.server.list_rv())
        self.assertEqual(quiet.end(), "clean")

    def test_a_bookmark_comes_shortly_before_the_timeout(self):
        s = Server("--bookmark-seconds", "0")  # no periodic ones
        try:
            w = s.watch("resourceVersion=%d&timeoutSeconds=1&allowWatchBookmarks=true" %
                        s.list_rv())
            self.assertEqual(w.next()["type"], "BOOKMARK")
            self.assertEqual(w.end(), "clean")
            w.close()
        finally:
            s.close()

    def test_after_compaction_an_old_version_gets_410_expired(self):
        rv = self.server.list_rv()
        self.server.control("apply", pod("p1"))
        current = self.server.control("compact")["resourceVersion"]
        self.assertEqual(int(current), rv + 1)
        w = self.watch("resourceVersion=%d&timeoutSeconds=30" % rv)
        self.assertEqual(w.status, 200)
        err = w.next()
        self.assertEqual(err["type"], "ERROR")
        self.assertEqual(err["object"], {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version: %d (%d)" % (rv, rv + 1),
            "reason": "Expired", "code": 410})
        self.assertEqual(w.end(), "clean")
        # From the current version it works; so does a relist's.
        ok = self.watch("resourceVersion=%s&timeoutSeconds=30" % current)
        self.server.control("apply", pod("p2"))
        self.assertEqual(ok.next()["object"]["metadata"]["name"], "p2")

    def test_history_is_bounded(self):
        rv = self.server.list_rv()
        for i in range(51):
            self.server.control("apply", pod("p1", restarts=i))
        self.assertEqual(self.watch("resourceVersion=%d" % rv).next()["object"]["code"], 410)
        w = self.watch("resourceVersion=%d&timeoutSeconds=30" % (rv + 1))
        self.assertEqual(len(w.until(lambda e: rv_of(e) == rv + 51)), 50)

    def test_drop_watches_breaks_streams_without_the_terminating_chunk(self):
        w = self.watch("timeoutSeconds=30")  # from "0": ADDED first, then open
        self.assertEqual(w.next()["type"], "ADDED")
        self.assertEqual(self.server.control("state")["watches"], 1)
        self.assertEqual(self.server.control("drop-watches")["dropped"], 1)
        self.assertEqual(w.end(), "dropped")

    def test_paginated_lists_keep_one_version(self):
        first = json.loads(self.server.get("/api/v1/pods?limit=1")[1])
        self.server.control("apply", pod("p1"))
        cont = urllib.request.quote(first["metadata"]["continue"], safe="")
        second = json.loads(self.server.get("/api/v1/pods?limit=1&continue=" + cont)[1])
        self.assertEqual(second["metadata"]["resourceVersion"],
                         first["metadata"]["resourceVersion"])
        self.assertEqual(first["metadata"]["remainingItemCount"], 2)
        # After a compaction (etcd's), the first page's continue token has expired.
        self.server.control("compact")
        code, body = self.server.get("/api/v1/pods?limit=1&continue=" + cont)
        self.assertEqual((code, json.loads(body)["reason"]), (410, "Expired"))


class WatchFaultTest(unittest.TestCase):
    def test_watch_gone_first_and_drop_after(self):
        s = Server("--watch-gone-first", "1", "--watch-drop-after", "0.5")
        try:
            rv = s.list_rv()
            w = s.watch("timeoutSeconds=30")  # from "0": not counted, dropped after 0.5 s
            self.assertEqual(w.next()["type"], "ADDED")
            self.assertEqual(w.end(), "dropped")
            w.close()
            w = s.watch("resourceVersion=%d&timeoutSeconds=30" % rv)
            err = w.next()
            self.assertEqual((err["type"], err["object"]["reason"]), ("ERROR", "Expired"))
            self.assertEqual(w.end(), "clean")
            w.close()
            w = s.watch("resourceVersion=%d&timeoutSeconds=30" % rv)
            self.assertEqual(w.end(), "dropped")
            w.close()
        finally:
            s.close()

    def test_churn_modifies_pods_at_a_rate_and_stops(self):
        s = Server("--churn", "200", "--churn-seconds", "0.5")
        try:
            w = s.watch("resourceVersion=1000&timeoutSeconds=30")  # the snapshot's version
            events = [w.next() for _ in range(100)]
            self.assertEqual({e["type"] for e in events}, {"MODIFIED"})
            self.assertEqual([rv_of(e) for e in events], list(range(1001, 1101)))
            self.assertIn("tocsin.test/churn", events[-1]["object"]["metadata"]["annotations"])
            restarts = sum(c["restartCount"] for p in json.loads(s.get("/api/v1/pods")[1])["items"]
                           for c in p["status"]["containerStatuses"])
            self.assertEqual(restarts, 3 * 77904 + 100)
            w.close()
            w = s.watch("resourceVersion=1100&timeoutSeconds=1")
            self.assertEqual(w.end(), "clean")  # no more than the 100
            self.assertEqual(s.control("state")["resourceVersion"], "1100")
            w.close()
        finally:
            s.close()


class ControlTest(unittest.TestCase):
    def setUp(self):
        self.server = Server()

    def tearDown(self):
        self.server.close()

    def lease(self, holder, rv=None):
        meta = {"name": "tocsin-controller", "namespace": "tocsin"}
        if rv:
            meta["resourceVersion"] = rv
        return {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": meta,
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}}

    def test_leases_for_leader_election(self):
        groups = json.loads(self.server.get("/apis")[1])["groups"]
        self.assertIn("coordination.k8s.io", [g["name"] for g in groups])
        resources = json.loads(self.server.get("/apis/coordination.k8s.io/v1")[1])["resources"]
        self.assertEqual([(r["name"], r["namespaced"]) for r in resources], [("leases", True)])
        self.assertIn("update", resources[0]["verbs"])
        base = "/apis/coordination.k8s.io/v1/namespaces/tocsin/leases"
        self.assertEqual(self.server.get(base + "/tocsin-controller")[0], 404)
        code, created = self.server.send("POST", base, self.lease("a"))
        self.assertEqual(code, 201)
        rv = created["metadata"]["resourceVersion"]
        code, again = self.server.send("POST", base, self.lease("b"))
        self.assertEqual((code, again["reason"]), (409, "AlreadyExists"))
        self.assertEqual(again["message"],
                         'leases.coordination.k8s.io "tocsin-controller" already exists')
        code, got = self.server.get(base + "/tocsin-controller")
        self.assertEqual(json.loads(got)["spec"]["holderIdentity"], "a")
        code, renewed = self.server.send("PUT", base + "/tocsin-controller", self.lease("a", rv))
        self.assertEqual(code, 200)
        self.assertGreater(int(renewed["metadata"]["resourceVersion"]), int(rv))
        self.assertEqual(renewed["metadata"]["uid"], created["metadata"]["uid"])
        code, stale = self.server.send("PUT", base + "/tocsin-controller", self.lease("b", rv))
        self.assertEqual((code, stale["reason"], stale["code"]), (409, "Conflict", 409))
        self.assertEqual(stale["details"], {"name": "tocsin-controller",
                                            "group": "coordination.k8s.io", "kind": "leases"})
        code, _ = self.server.send("PUT", base + "/other", dict(self.lease("b"), metadata={
            "name": "other", "namespace": "tocsin"}))
        self.assertEqual(code, 404)
        w = self.server.watch("timeoutSeconds=0", base)
        self.assertEqual(w.next()["object"]["spec"]["holderIdentity"], "a")
        w.close()
        code, gone = self.server.send("DELETE", base + "/tocsin-controller", None)
        self.assertEqual(code, 200)
        self.assertEqual(self.server.get(base + "/tocsin-controller")[0], 404)
        # kind and apiVersion may be left out, as the real server takes them from the URL.
        code, bare = self.server.send("POST", base, {"metadata": {"name": "bare"}})
        self.assertEqual((code, bare["kind"], bare["apiVersion"]),
                         (201, "Lease", "coordination.k8s.io/v1"))
        self.assertEqual(self.server.send("POST", base, {"kind": "Pod",
                                                         "metadata": {"name": "x"}})[0], 400)

    def test_requests_are_counted_and_failures_injected(self):
        self.server.control("reset-requests")
        self.server.get("/api/v1/pods?limit=1")
        self.server.get("/api/v1/nodes/gpu-node-01")
        self.server.get("/api/v1/nodes?watch=1&timeoutSeconds=0")
        self.server.send("POST", "/apis/coordination.k8s.io/v1/namespaces/t/leases",
                         {"kind": "Lease", "metadata": {"name": "l"}})
        self.server.send("PATCH", "/api/v1/nodes/gpu-node-01/status", {},
                         "application/merge-patch+json")
        self.assertEqual(self.server.control("fail", {"status": 503, "count": 2})["count"], 2)
        self.assertEqual(self.server.get("/api/v1/pods")[0], 503)
        self.assertEqual(self.server.send("PUT", "/apis/coordination.k8s.io/v1/namespaces/t/"
                                          "leases/l", {"kind": "Lease"})[0], 503)
        self.assertEqual(self.server.get("/api/v1/pods")[0], 200)
        counts = self.server.control("requests")
        self.assertEqual(counts["total"], 8)
        self.assertEqual(counts["byVerb"], {"list": 3, "get": 1, "watch": 1, "create": 1,
                                            "patch": 1, "update": 1})
        self.assertEqual(counts["byResource"]["pods"], {"list": 3})
        self.assertEqual(counts["byResource"]["nodes"], {"get": 1, "watch": 1, "patch": 1})


class SynthTest(unittest.TestCase):
    def test_a_synthetic_cluster_is_served(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "synth.json")
            subprocess.run([sys.executable, os.path.join(HERE, "synth.py"), "--nodes", "100",
                            "--pods", "1000", "--crashloop-fraction", "0.5", "-o", path],
                           check=True)
            s = Server("--churn", "100", "--churn-seconds", "0.2", snapshot=path)
            try:
                nodes = json.loads(s.get("/api/v1/nodes")[1])["items"]
                self.assertEqual(len(nodes), 100)
                fabric = [n for n in nodes
                          if n["metadata"]["labels"].get("network.nvidia.com/rdma") == "true"]
                self.assertEqual(len(fabric), 90)
                self.assertEqual(fabric[0]["status"]["allocatable"]["rdma/hca_shared_devices_a"],
                                 "1000")
                pods = json.loads(s.get("/api/v1/pods")[1])["items"]
                self.assertEqual(len(pods), 1000)
                plugin = [p for p in pods if p["metadata"]["namespace"] == "kube-system"]
                self.assertEqual(len(plugin), 90)
                waiting = [p for p in plugin if "waiting" in
                           p["status"]["containerStatuses"][0]["state"]]
                self.assertEqual(len(waiting), 45)
                self.assertEqual(plugin[0]["metadata"]["ownerReferences"][0]["kind"],
                                 "DaemonSet")
                workers = [p for p in pods if p["metadata"]["namespace"] == "ml"]
                self.assertEqual(len(workers), 90)
                env = {e["name"]: e["value"] for e in workers[-1]["spec"]["containers"][0]["env"]}
                self.assertEqual(env["WORLD_SIZE"], "10")  # 90 = 5 jobs of 16 and one of 10
                self.assertIn("NCCL_IB_HCA", env)
                ds = json.loads(s.get("/apis/apps/v1/daemonsets")[1])["items"][0]
                self.assertEqual(ds["status"]["numberUnavailable"], 45)
                w = s.watch("resourceVersion=1000&timeoutSeconds=30")
                self.assertEqual({w.next()["type"] for _ in range(20)}, {"MODIFIED"})
                w.close()
            finally:
                s.close()


if __name__ == "__main__":
    unittest.main()
