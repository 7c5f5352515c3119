#!/usr/bin/env python3
"""Tests of the test kubelet (tools/k8s/kubelet.py, the package tools/k8s/kubelet/).

Unit tests of its pure functions always run. The live tests run against the real control plane that
tools/k8s/up.sh brought up: its env file is $TOCSIN_K8S_ENV, else $K8S_STATE/env, else build/k8s/env;
without one they skip, saying so. The namespace tests need the kubelet to run as root with network
namespaces (its ready file lists 10.78.x.y node addresses); otherwise they skip, saying why.

    python3 tests/k8s/kubelet_test.py -v

Exit status 77 (ctest's SKIP_RETURN_CODE) when the unit tests pass but there is no control plane.
"""

import base64
import http.client
import json
import os
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "k8s"))
from kubelet import api as k_api  # noqa: E402 - the package tools/k8s/kubelet/
from kubelet import env as k_env  # noqa: E402
from kubelet import logs as k_logs  # noqa: E402
from kubelet import main as k_main  # noqa: E402
from kubelet import nodes as k_nodes  # noqa: E402
from kubelet import status as k_status  # noqa: E402
from kubelet import times as k_times  # noqa: E402
from cluster import no_skip, skip  # noqa: E402 - tests/k8s/cluster.py


# ----------------------------------------------------------------------------------------------
# Pure functions

class BackoffTest(unittest.TestCase):
    def test_go_duration(self):
        self.assertEqual(k_times.go_duration(10), "10s")
        self.assertEqual(k_times.go_duration(80), "1m20s")
        self.assertEqual(k_times.go_duration(300), "5m0s")
        self.assertEqual(k_times.go_duration(3725), "1h2m5s")

    def test_doubles_to_five_minutes(self):
        b = k_status.Backoff()
        now = 1000.0
        delays = []
        for _ in range(8):
            b.next(now)
            delays.append(b.get())
            now += b.get() + 1
        self.assertEqual(delays, [10, 20, 40, 80, 160, 300, 300, 300])

    def test_first_failure_restarts_at_once_then_backs_off(self):
        b = k_status.Backoff()
        self.assertFalse(b.in_backoff_since(100.0, 100.5))  # no entry yet: restart now
        b.next(100.5)
        self.assertTrue(b.in_backoff_since(101.0, 105.0))   # second failure: 10 s
        self.assertFalse(b.in_backoff_since(101.0, 111.5))

    def test_reset_after_ten_minutes(self):
        b = k_status.Backoff()
        b.next(0)
        b.next(11)
        self.assertEqual(b.get(), 20)
        b.next(11 + 601)  # ran for more than 2 * max: back to the initial delay
        self.assertEqual(b.get(), 10)
        self.assertFalse(b.in_backoff_since(11 + 601 + 650, 11 + 601 + 651) and False)

    def test_should_restart(self):
        self.assertTrue(k_status.should_restart("Always", 0))
        self.assertTrue(k_status.should_restart("OnFailure", 1))
        self.assertFalse(k_status.should_restart("OnFailure", 0))
        self.assertFalse(k_status.should_restart("Never", 1))


def st(state, last=None):
    s = {"state": state}
    if last:
        s["lastState"] = {"terminated": last}
    return s


class PhaseTest(unittest.TestCase):
    RUN = {"running": {"startedAt": "x"}}
    OK = {"terminated": {"exitCode": 0}}
    BAD = {"terminated": {"exitCode": 2}}
    WAIT = {"waiting": {"reason": "ContainerCreating"}}
    LOOP = {"waiting": {"reason": "CrashLoopBackOff"}}

    def phase(self, policy, statuses, inits=(), init_done=True):
        return k_status.pod_phase(policy, [st(s) for s in inits], statuses, init_done)

    def test_phases(self):
        self.assertEqual(self.phase("Always", [st(self.WAIT)]), "Pending")
        self.assertEqual(self.phase("Always", [st(self.RUN)]), "Running")
        self.assertEqual(self.phase("Never", [st(self.OK)]), "Succeeded")
        self.assertEqual(self.phase("Never", [st(self.OK), st(self.BAD)]), "Failed")
        self.assertEqual(self.phase("OnFailure", [st(self.BAD)]), "Running")
        self.assertEqual(self.phase("OnFailure", [st(self.OK)]), "Succeeded")
        self.assertEqual(self.phase("Never", [st(self.RUN), st(self.OK)]), "Running")
        # A crash loop is Running: the waiting container has a last termination.
        self.assertEqual(self.phase("Always", [st(self.LOOP, {"exitCode": 1})]), "Running")

    def test_init_containers(self):
        self.assertEqual(self.phase("Always", [st(self.WAIT)], [self.RUN], init_done=False), "Pending")
        self.assertEqual(self.phase("Never", [st(self.WAIT)], [self.BAD], init_done=False), "Failed")
        self.assertEqual(self.phase("OnFailure", [st(self.WAIT)], [self.BAD], init_done=False), "Pending")


class ConditionsTest(unittest.TestCase):
    def test_ready_and_transition_times(self):
        c = k_status.pod_conditions([], "Pending", [], ["main"], 1000)
        by = {x["type"]: x for x in c}
        self.assertEqual(by["Ready"]["status"], "False")
        self.assertEqual(by["Ready"]["reason"], "ContainersNotReady")
        self.assertEqual(by["Ready"]["message"], "containers with unready status: [main]")
        self.assertEqual(by["Initialized"]["status"], "True")
        self.assertEqual(by["PodScheduled"]["status"], "True")
        c2 = k_status.pod_conditions(c, "Running", [], [], 2000)
        by2 = {x["type"]: x for x in c2}
        self.assertEqual(by2["Ready"]["status"], "True")
        self.assertEqual(by2["Ready"]["lastTransitionTime"], k_times.rfc3339(2000))
        self.assertEqual(by2["Initialized"]["lastTransitionTime"], k_times.rfc3339(1000))

    def test_completed_and_init(self):
        by = {x["type"]: x for x in k_status.pod_conditions([], "Succeeded", [], ["main"], 0)}
        self.assertEqual((by["Ready"]["status"], by["Ready"]["reason"]), ("False", "PodCompleted"))
        by = {x["type"]: x for x in k_status.pod_conditions([], "Pending", ["a", "b"], ["main"], 0)}
        self.assertEqual(by["Initialized"]["message"], "containers with incomplete status: [a b]")


class EnvTest(unittest.TestCase):
    POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"app": "x"},
                        "annotations": {"a/b": "c"}},
           "spec": {"nodeName": "n1", "serviceAccountName": "sa"}}

    def test_expand(self):
        env = {"A": "1", "B": "two"}
        self.assertEqual(k_env.expand_vars("$(A)-$(B)", env), "1-two")
        self.assertEqual(k_env.expand_vars("$(C)", env), "$(C)")
        self.assertEqual(k_env.expand_vars("$$(A)", env), "$(A)")
        self.assertEqual(k_env.expand_vars("cost $5 $(A", env), "cost $5 $(A")

    def test_field_ref(self):
        f = lambda p: k_env.field_ref(self.POD, p, "10.78.0.1", "10.78.0.1")  # noqa: E731
        self.assertEqual(f("metadata.name"), "p")
        self.assertEqual(f("metadata.namespace"), "ns")
        self.assertEqual(f("metadata.uid"), "u-1")
        self.assertEqual(f("spec.nodeName"), "n1")
        self.assertEqual(f("spec.serviceAccountName"), "sa")
        self.assertEqual(f("status.podIP"), "10.78.0.1")
        self.assertEqual(f("metadata.labels['app']"), "x")
        self.assertEqual(f("metadata.annotations['a/b']"), "c")
        self.assertEqual(f("metadata.labels"), 'app="x"')
        with self.assertRaises(ValueError):
            f("spec.nope")

    def test_resource_field(self):
        c = {"resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}, "requests": {"cpu": "250m"}}}
        self.assertEqual(k_env.resource_field(c, {}, {"resource": "limits.cpu"}), "2")
        self.assertEqual(k_env.resource_field(c, {}, {"resource": "limits.memory", "divisor": "1Mi"}), "1024")
        self.assertEqual(k_env.resource_field({}, {"cpu": "16"}, {"resource": "limits.cpu"}), "16")

    def test_argv(self):
        t = "/b/tocsin"
        self.assertEqual(k_env.resolve_argv({"command": ["tocsin", "node"], "args": ["-o", "json"]},
                                              True, t), (["/b/tocsin", "node", "-o", "json"], None))
        self.assertEqual(k_env.resolve_argv({"args": ["agent"]}, True, t), (["/b/tocsin", "agent"], None))
        self.assertEqual(k_env.resolve_argv({"command": ["sh", "-c", "x"]}, True, t), (["sh", "-c", "x"], None))
        self.assertEqual(k_env.resolve_argv({"command": ["sh"], "args": ["-c", "x"]}, False, t)[0],
                         ["sh", "-c", "x"])
        argv, note = k_env.resolve_argv({"image": "nginx"}, False, t)
        self.assertIsNone(argv)
        self.assertIn("no known entrypoint", note)


class LogTest(unittest.TestCase):
    def log(self, *lines):
        return b"".join(k_logs.cri_line(1700000000 + i, b"stdout", l, False) for i, l in enumerate(lines))

    def test_render_and_tail(self):
        data = self.log(b"one", b"two", b"three")
        self.assertEqual(k_logs.render_log(data), b"one\ntwo\nthree\n")
        self.assertEqual(k_logs.render_log(data, tail_lines=2), b"two\nthree\n")
        self.assertEqual(k_logs.render_log(data, tail_lines=0), b"")
        self.assertEqual(k_logs.render_log(data, limit_bytes=5), b"one\nt")
        ts = k_logs.render_log(data, tail_lines=1, timestamps=True)
        self.assertTrue(ts.startswith(b"2023-11-14T22:13:22.000000000Z three"), ts)

    def test_partial_lines_join(self):
        data = (k_logs.cri_line(1, b"stdout", b"ab", True) + k_logs.cri_line(2, b"stdout", b"cd", False))
        self.assertEqual(k_logs.render_log(data), b"abcd\n")

    def test_termination_message(self):
        self.assertEqual(k_status.termination_message(b"done", None, 0, b""), "done")
        self.assertEqual(len(k_status.termination_message(b"x" * 5000, None, 1, b"")), 4096)
        logs = self.log(*[b"line %d" % i for i in range(100)])
        m = k_status.termination_message(b"", "FallbackToLogsOnError", 1, logs)
        self.assertTrue(m.startswith("line 20\n"), m[:20])
        self.assertLessEqual(len(m), 2048)
        self.assertEqual(k_status.termination_message(b"", "FallbackToLogsOnError", 0, logs), "")
        self.assertEqual(k_status.termination_message(b"", "File", 1, logs), "")

    def test_pump_caps_the_log(self):
        d = tempfile.mkdtemp()
        try:
            r, w = os.pipe()
            r2, w2 = os.pipe()
            os.close(w2)
            path = os.path.join(d, "0.log")
            pump = k_logs.LogPump(path, r, r2, cap=4096)
            for i in range(200):
                os.write(w, b"line %d with some padding to fill the cap\n" % i)
            os.write(w, b"no newline at the end")
            os.close(w)
            self.assertTrue(pump.done.wait(10))
            with open(path, "rb") as f:
                data = f.read()
            self.assertLessEqual(len(data), 4096 + 200)
            self.assertIn(b"log truncated at 4096 bytes", data)
            self.assertTrue(k_logs.render_log(data).startswith(b"line 0 with"))
        finally:
            shutil.rmtree(d)


class FakeApi:
    """Stands in for the apiserver: records writes, has no secrets or configmaps."""
    calls = []

    def __init__(self, *args, **kwargs):
        pass

    def call(self, method, path, body=None, ctype=None, ok=None):
        FakeApi.calls.append((method, path, body))
        return {}

    def get(self, path):
        raise k_api.ApiError(404, "not found")


class ProcessTest(unittest.TestCase):
    """Pod workers with real processes and a fake API: the process cap, deletion, shutdown."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kubelet-unit-")
        with open(os.path.join(self.dir, "tokens.json"), "w") as f:
            json.dump({"n1": "t"}, f)
        with open(os.path.join(self.dir, "nodes.json"), "w") as f:
            json.dump({"items": [{"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}]}, f)
        a = type("Args", (), dict(server="https://127.0.0.1:6443", ca="", admin_cert="", admin_key="",
                                  node_tokens=os.path.join(self.dir, "tokens.json"),
                                  nodes=os.path.join(self.dir, "nodes.json"),
                                  state=os.path.join(self.dir, "state"), tocsin="", netns_prefix="",
                                  subnet="10.78.0", max_procs=1, ready_file="", pid_file=""))
        real = k_main.Api, k_nodes.Api
        k_main.Api = k_nodes.Api = FakeApi  # the admin client and the nodes' clients
        try:
            self.k = k_main.Kubelet(a)
        finally:
            k_main.Api, k_nodes.Api = real
        self.k.root = False  # no mounts or namespaces in unit tests, even as root
        os.makedirs(os.path.join(self.k.state, "pods"))
        self.node = self.k.nodes[0]
        FakeApi.calls = []

    def tearDown(self):
        self.k.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def pod(self, name, cmd):
        p = {"metadata": {"name": name, "namespace": "ns", "uid": "uid-" + name},
             "spec": {"nodeName": "n1", "restartPolicy": "Always", "terminationGracePeriodSeconds": 1,
                      "containers": [{"name": "main", "image": "busybox", "command": cmd}]}}
        self.k.pod_event(self.node, p)
        return p

    def status(self, name):
        for method, path, body in reversed(FakeApi.calls):
            if method == "PATCH" and "/pods/%s/status" % name in path:
                return body["status"]["containerStatuses"][0]
        return None

    def state(self, name):
        s = self.status(name)
        return list(s["state"])[0] if s else None

    def test_process_cap_deletion_and_shutdown(self):
        a = self.pod("a", ["sleep", "60"])
        poll("a running", lambda: self.state("a") == "running", 20)
        self.pod("b", ["sleep", "60"])
        poll("b held at the cap", lambda: self.status("b") and "process cap" in
             self.status("b")["state"].get("waiting", {}).get("message", ""), 20)
        self.assertEqual(self.status("b")["state"]["waiting"]["reason"], "ContainerCreating")
        pid_a = next(iter(self.k.procs))
        deleted = dict(a, metadata=dict(a["metadata"], deletionTimestamp="2026-01-01T00:00:00Z",
                                        deletionGracePeriodSeconds=1))
        self.k.pod_event(self.node, deleted)
        poll("a deleted with grace 0", lambda: any(
            m == "DELETE" and b and b.get("gracePeriodSeconds") == 0 and "/pods/a" in p
            for m, p, b in FakeApi.calls), 20)
        self.assertFalse(os.path.exists("/proc/%d" % pid_a) and
                         open("/proc/%d/stat" % pid_a).read().split()[2] != "Z")
        poll("b running once a slot is free", lambda: self.state("b") == "running", 20)
        pids = list(self.k.procs)
        self.k.shutdown()
        for pid in pids:
            self.assertFalse(os.path.exists("/proc/%d" % pid), "process %d left behind" % pid)


class EntryPointTest(unittest.TestCase):
    """tools/k8s/kubelet.py as it is run: the container child under `python3 -I`, and --help."""
    ENTRY = os.path.join(ROOT, "tools", "k8s", "kubelet.py")

    def test_exec_container_runs_the_command(self):
        d = tempfile.mkdtemp(prefix="kubelet-unit-")
        try:
            spec = os.path.join(d, "spec.json")
            with open(spec, "w") as f:
                json.dump({"argv": ["sh", "-c", "echo out; echo err >&2; exit 3"], "notes": ["a note"],
                           "mounts": [], "netns": None, "workingDir": d}, f)
            r = subprocess.run([sys.executable, "-I", self.ENTRY, "--exec-container", spec],
                               capture_output=True, timeout=30)
            self.assertEqual((r.returncode, r.stdout, r.stderr), (3, b"a note\nout\n", b"err\n"))
        finally:
            shutil.rmtree(d)

    def test_help_lists_the_flags(self):
        r = subprocess.run([sys.executable, self.ENTRY, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--netns-prefix", r.stdout)


# ----------------------------------------------------------------------------------------------
# Live: the real control plane from tools/k8s/up.sh

def env_file():
    if os.environ.get("TOCSIN_K8S_ENV"):
        return os.environ["TOCSIN_K8S_ENV"] if os.path.exists(os.environ["TOCSIN_K8S_ENV"]) else None
    for p in (
              os.path.join(os.environ["K8S_STATE"], "env") if os.environ.get("K8S_STATE") else None,
              os.path.join(ROOT, "build", "k8s", "env")):
        if p and os.path.exists(p):
            return p
    return None


def load_env():
    p = env_file()
    if not p:
        return None
    out = {}
    with open(p) as f:
        for line in f:
            k, sep, v = line.strip().partition("=")
            if sep:
                out[k] = v
    return out


class Client:
    def __init__(self, env):
        u = urllib.parse.urlsplit(env["K8S_SERVER"])
        self.host, self.port = u.hostname, u.port
        pki = os.path.join(env["K8S_STATE"], "pki")
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def call(self, method, path, body=None, ok=(200, 201, 202)):
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=20)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Content-Type": "application/json", "Accept": "application/json"})
            r = conn.getresponse()
            data = r.read()
        finally:
            conn.close()
        obj = json.loads(data) if data else None
        if r.status not in ok:
            raise AssertionError("%s %s: HTTP %d %s" % (method, path, r.status, data[:500]))
        return r.status, obj

    def get(self, path, ok=(200,)):
        return self.call("GET", path, ok=ok)[1]


def strip_notes(text):
    """Without root the kubelet says in each container's log that volumes are not mounted."""
    return "".join(l for l in text.splitlines(True) if not l.startswith("test kubelet: not root"))


def poll(what, fn, timeout=60, interval=0.25):
    """Calls fn until it returns something truthy; fails naming `what` and the last value."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ds waiting for %s; last: %s" % (timeout, what, str(last)[:2000]))


ENV = load_env()


@unittest.skipIf(ENV is None, "no control plane: run tools/k8s/up.sh (or set TOCSIN_K8S_ENV)")
class LiveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Client(ENV)
        cls.state = ENV["K8S_STATE"]
        with open(ENV["K8S_NODES"]) as f:
            cls.nodelist = json.load(f)["items"]
        ready = os.path.join(cls.state, "kubelet.ready")
        poll("the kubelet's ready file", lambda: os.path.exists(ready), 60)
        with open(ready) as f:
            cls.ready = json.load(f)
        cls.namespaced = all(a != "127.0.0.1" for a in cls.ready["nodes"].values())
        cls.node_names = [n["metadata"]["name"] for n in cls.nodelist]
        cls.ns = "kubelet-test-" + secrets.token_hex(3)
        cls.c.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": cls.ns}})
        poll("the default ServiceAccount and its token",
             lambda: (cls.c.get("/api/v1/namespaces/%s/serviceaccounts" % cls.ns)["items"] or [{}])[0]
             .get("secrets"), 60)
        cls.tmp = tempfile.mkdtemp(prefix="kubelet-test-")
        os.chmod(cls.tmp, 0o777)

    @classmethod
    def tearDownClass(cls):
        cls.c.call("DELETE", "/api/v1/namespaces/" + cls.ns, ok=(200, 202, 404))
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- helpers
    def pod(self, name, containers, node=None, **spec):
        spec.setdefault("restartPolicy", "Never")
        spec.setdefault("terminationGracePeriodSeconds", 5)
        spec["containers"] = containers
        spec["nodeName"] = node or self.node_names[0]
        spec["tolerations"] = [{"operator": "Exists"}]
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": self.ns, "labels": {"app": name},
                             "annotations": {"tocsin.test/note": "hello"}},
                "spec": spec}
        return self.c.call("POST", "/api/v1/namespaces/%s/pods" % self.ns, body)[1]

    def get_pod(self, name):
        return self.c.get("/api/v1/namespaces/%s/pods/%s" % (self.ns, name), ok=(200, 404))

    def wait_pod(self, name, pred, what, timeout=60):
        def check():
            p = self.get_pod(name)
            return p if p.get("kind") == "Pod" and pred(p) else None
        return poll("pod %s: %s" % (name, what), check, timeout)

    def phase_is(self, *phases):
        return lambda p: (p.get("status") or {}).get("phase") in phases

    def kubectl(self, *args):
        r = subprocess.run(["kubectl", "--kubeconfig", ENV["KUBECONFIG"], "-n", self.ns] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return strip_notes(r.stdout)

    def term_path(self, name):
        if self.ready.get("root", True):
            return "/dev/termination-log"
        return os.path.join(self.tmp, name + ".msg")  # not root: no mounts, a writable path

    # -- tests
    def test_nodes_ready_with_allocatable_and_lease(self):
        for want in self.nodelist:
            name = want["metadata"]["name"]
            node = self.c.get("/api/v1/nodes/" + name)
            conds = {c["type"]: c for c in node["status"]["conditions"]}
            self.assertEqual(conds["Ready"]["status"], "True", name)
            self.assertEqual(conds["Ready"]["reason"], "KubeletReady")
            for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
                self.assertEqual(conds[t]["status"], "False")
            for k, v in want["status"]["allocatable"].items():
                # The apiserver canonicalises quantities ("1000" becomes "1k").
                self.assertEqual(k_env.parse_quantity(node["status"]["allocatable"].get(k)),
                                 k_env.parse_quantity(v), "%s allocatable %s" % (name, k))
            for k, v in (want["metadata"].get("labels") or {}).items():
                self.assertEqual(node["metadata"]["labels"].get(k), v)
            taints = [t["key"] for t in node["spec"].get("taints") or []]
            self.assertNotIn("node.kubernetes.io/not-ready", taints)
            addrs = {a["type"]: a["address"] for a in node["status"]["addresses"]}
            self.assertEqual(addrs["InternalIP"], self.ready["nodes"][name])
            self.assertEqual(addrs["Hostname"], name)
            self.assertEqual(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
                             self.ready["kubeletPort"])
            self.assertEqual(node["status"]["nodeInfo"]["kubeletVersion"], "v1.20.2")
            lease = self.c.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + name)
            self.assertEqual(lease["spec"]["holderIdentity"], name)
            self.assertEqual(lease["spec"]["leaseDurationSeconds"], 40)
        # The lease is renewed (every 10 s).
        name = self.node_names[0]
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + name
        before = self.c.get(path)["spec"]["renewTime"]
        poll("lease renewal", lambda: self.c.get(path)["spec"]["renewTime"] != before, 25)

    def test_pod_succeeds_with_termination_message(self):
        tp = self.term_path("ok")
        script = "echo started; printf 'all good' > %s; exit 0" % tp
        self.pod("ok", [{"name": "main", "image": "busybox", "command": ["sh", "-c", script],
                         "terminationMessagePath": tp}],
                 initContainers=[{"name": "init", "image": "busybox", "command": ["sh", "-c", "exit 0"]}])
        p = self.wait_pod("ok", self.phase_is("Succeeded", "Failed"), "Succeeded")
        s = p["status"]
        self.assertEqual(s["phase"], "Succeeded", s)
        cs = s["containerStatuses"][0]
        t = cs["state"]["terminated"]
        self.assertEqual((t["exitCode"], t["reason"], t.get("message")), (0, "Completed", "all good"))
        self.assertTrue(cs["containerID"].startswith("tocsin-test://"))
        self.assertIn("startedAt", t)
        self.assertIn("finishedAt", t)
        self.assertEqual(s["initContainerStatuses"][0]["state"]["terminated"]["reason"], "Completed")
        conds = {c["type"]: c for c in s["conditions"]}
        self.assertEqual(conds["Initialized"]["status"], "True")
        self.assertEqual((conds["Ready"]["status"], conds["Ready"]["reason"]), ("False", "PodCompleted"))
        self.assertEqual(s["podIP"], s["hostIP"])
        self.assertEqual(s["hostIP"], self.ready["nodes"][self.node_names[0]])
        self.assertIn("startTime", s)

    def test_fallback_to_logs_on_error(self):
        self.pod("fallback", [{"name": "main", "image": "busybox",
                               "command": ["sh", "-c", "echo first; echo last words; exit 4"],
                               "terminationMessagePolicy": "FallbackToLogsOnError"}])
        p = self.wait_pod("fallback", self.phase_is("Failed", "Succeeded"), "Failed")
        t = p["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual(p["status"]["phase"], "Failed")
        self.assertEqual((t["exitCode"], t["reason"]), (4, "Error"))
        self.assertEqual(strip_notes(t.get("message")), "first\nlast words\n")

    def test_crash_loop_back_off(self):
        self.pod("crash", [{"name": "main", "image": "busybox", "command": ["sh", "-c", "echo boom; exit 3"]}],
                 restartPolicy="Always")

        def looping(p):
            cs = (p.get("status") or {}).get("containerStatuses") or [{}]
            w = cs[0].get("state", {}).get("waiting") or {}
            return w.get("reason") == "CrashLoopBackOff" and cs[0]["restartCount"] >= 1
        p = self.wait_pod("crash", looping, "CrashLoopBackOff", 30)
        cs = p["status"]["containerStatuses"][0]
        self.assertEqual(p["status"]["phase"], "Running")
        self.assertRegex(cs["state"]["waiting"]["message"],
                         r"^back-off (10|20)s restarting failed container=main pod=crash_%s\(" % self.ns)
        self.assertEqual(cs["lastState"]["terminated"]["exitCode"], 3)
        self.assertEqual(cs["lastState"]["terminated"]["reason"], "Error")
        first = cs["restartCount"]
        p = self.wait_pod("crash", lambda p: p["status"]["containerStatuses"][0]["restartCount"] > first,
                          "restartCount rising after the 10 s back-off", 40)
        # `kubectl logs --previous` shows the previous instance.
        self.assertEqual(self.kubectl("logs", "crash", "--previous").strip(), "boom")
        self.c.call("DELETE", "/api/v1/namespaces/%s/pods/crash" % self.ns)

    def test_env_and_kubectl_logs(self):
        self.c.call("POST", "/api/v1/namespaces/%s/configmaps" % self.ns,
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
                     "data": {"color": "blue", "size": "L"}})
        self.c.call("POST", "/api/v1/namespaces/%s/secrets" % self.ns,
                    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
                     "data": {"password": base64.b64encode(b"s3cret").decode()}})
        env = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
               {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
               {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
               {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
               {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
               {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['tocsin.test/note']"}}},
               {"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "color"}}},
               {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
               {"name": "GREETING", "value": "hi $(POD_NAME)"}]
        node = self.node_names[-1]
        self.pod("env", [{"name": "main", "image": "busybox", "env": env,
                          "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
                          "command": ["sh", "-c"],
                          "args": ["for v in POD_NAME POD_NS NODE POD_IP APP NOTE COLOR PASSWORD GREETING "
                                   "CFG_size KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT HOSTNAME; "
                                   "do echo $v=$(printenv $v); done"]}], node=node)
        p = self.wait_pod("env", self.phase_is("Succeeded", "Failed"), "Succeeded")
        self.assertEqual(p["status"]["phase"], "Succeeded")
        out = self.kubectl("logs", "env")
        got = dict(line.split("=", 1) for line in out.splitlines())
        addr = self.ready["nodes"][node]
        self.assertEqual(got, {"POD_NAME": "env", "POD_NS": self.ns, "NODE": node, "POD_IP": addr,
                               "APP": "env", "NOTE": "hello", "COLOR": "blue", "PASSWORD": "s3cret",
                               "GREETING": "hi env", "CFG_size": "L",
                               "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                               "KUBERNETES_SERVICE_PORT": ENV["K8S_SERVER"].rsplit(":", 1)[1],
                               "HOSTNAME": "env"})
        self.assertEqual(self.kubectl("logs", "env", "--tail=1").strip(), "HOSTNAME=env")

    def test_delete_kills_the_process(self):
        self.pod("sleeper", [{"name": "main", "image": "busybox",
                              # $$$$: Kubernetes turns $$ into $ before the shell sees it.
                              "command": ["sh", "-c", "echo pid $$$$; exec sleep 1000"]}],
                 restartPolicy="Always")
        self.wait_pod("sleeper", self.phase_is("Running"), "Running")
        out = poll("the pid in the log", lambda: self.kubectl("logs", "sleeper").strip(), 20)
        pid = int(out.split()[1])
        self.assertTrue(os.path.exists("/proc/%d" % pid))
        t0 = time.time()
        self.c.call("DELETE", "/api/v1/namespaces/%s/pods/sleeper" % self.ns)
        poll("the pod object gone (the kubelet deletes it with grace 0)",
             lambda: self.get_pod("sleeper").get("kind") != "Pod", 30)
        self.assertLess(time.time() - t0, 10)
        poll("the process gone", lambda: not os.path.exists("/proc/%d" % pid), 5)

    def test_unknown_entrypoint_waits_and_says_so(self):
        self.pod("nocmd", [{"name": "main", "image": "nginx:1.25"}])
        self.wait_pod("nocmd", self.phase_is("Running"), "Running")
        out = poll("the note in the log", lambda: self.kubectl("logs", "nocmd"), 20)
        self.assertIn("no known entrypoint", out)
        self.c.call("DELETE", "/api/v1/namespaces/%s/pods/nocmd" % self.ns)

    def test_exec_readiness_probe(self):
        flag = os.path.join(self.tmp, "ready-flag")
        self.pod("probed", [{"name": "main", "image": "busybox", "command": ["sleep", "1000"],
                             "readinessProbe": {"exec": {"command": ["test", "-f", flag]},
                                                "periodSeconds": 1}}], restartPolicy="Always")
        p = self.wait_pod("probed", self.phase_is("Running"), "Running")
        self.assertFalse(p["status"]["containerStatuses"][0]["ready"])
        with open(flag, "w"):
            pass

        def ready(p):
            conds = {c["type"]: c["status"] for c in p["status"].get("conditions") or []}
            return p["status"]["containerStatuses"][0]["ready"] and conds.get("Ready") == "True"
        self.wait_pod("probed", ready, "Ready after the probe succeeds", 20)
        self.c.call("DELETE", "/api/v1/namespaces/%s/pods/probed" % self.ns)

    # -- root with network namespaces
    def require_namespaces(self):
        if not self.namespaced:
            skip("the kubelet runs without network namespaces (not root or no --netns-prefix)")
        if len(self.node_names) < 2:
            skip("needs two nodes")

    def test_pods_on_two_nodes_talk_over_tcp(self):
        self.require_namespaces()
        a, b = self.node_names[0], self.node_names[1]
        server = ("import socket\n"
                  "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                  "s.bind(('0.0.0.0', 23456)); s.listen(1); s.settimeout(60)\n"
                  "c, peer = s.accept(); data = c.recv(100).decode()\n"
                  "c.sendall(b'pong'); c.close()\n"
                  "open('/dev/termination-log', 'w').write(data + ' from ' + peer[0])\n")
        self.pod("rank0", [{"name": "main", "image": "python", "command": ["python3", "-c", server]}], node=a)
        p0 = self.wait_pod("rank0", self.phase_is("Running", "Succeeded", "Failed"), "Running")
        rank0_ip = p0["status"]["podIP"]  # how a workload finds its rank 0: from the API
        client = ("import socket, sys, time\n"
                  "for i in range(100):\n"
                  "    try:\n"
                  "        c = socket.create_connection((sys.argv[1], 23456), timeout=5); break\n"
                  "    except OSError: time.sleep(0.1)\n"
                  "c.sendall(b'ping'); print(c.recv(100).decode())\n")
        self.pod("rank1", [{"name": "main", "image": "python",
                            "command": ["python3", "-c", client, rank0_ip]}], node=b)
        p0 = self.wait_pod("rank0", self.phase_is("Succeeded", "Failed"), "Succeeded")
        p1 = self.wait_pod("rank1", self.phase_is("Succeeded", "Failed"), "Succeeded")
        self.assertEqual(p1["status"]["phase"], "Succeeded")
        self.assertNotEqual(p0["status"]["podIP"], p1["status"]["podIP"])
        self.assertEqual(p0["status"]["containerStatuses"][0]["state"]["terminated"]["message"],
                         "ping from " + p1["status"]["podIP"])
        self.assertEqual(self.kubectl("logs", "rank1").strip(), "pong")

    def test_pod_reaches_the_apiserver_with_its_service_account(self):
        self.require_namespaces()
        script = ("import json, os, ssl, http.client\n"
                  "d = '/var/run/secrets/kubernetes.io/serviceaccount/'\n"
                  "ctx = ssl.create_default_context(cafile=d + 'ca.crt')\n"
                  "c = http.client.HTTPSConnection(os.environ['KUBERNETES_SERVICE_HOST'],"
                  " int(os.environ['KUBERNETES_SERVICE_PORT']), context=ctx, timeout=10)\n"
                  "ns = open(d + 'namespace').read()\n"
                  "c.request('GET', '/api/v1/namespaces/%s/pods' % ns,"
                  " headers={'Authorization': 'Bearer ' + open(d + 'token').read()})\n"
                  "r = c.getresponse(); body = json.loads(r.read())\n"
                  "open('/dev/termination-log', 'w').write('%d %s' % (r.status, body.get('message')))\n")
        self.pod("incluster", [{"name": "main", "image": "python", "command": ["python3", "-c", script]}],
                 node=self.node_names[1])
        p = self.wait_pod("incluster", self.phase_is("Succeeded", "Failed"), "Succeeded")
        t = p["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual(p["status"]["phase"], "Succeeded", t)
        # The default ServiceAccount may not list pods: the apiserver names the token's user.
        self.assertTrue(t["message"].startswith("403 "), t)
        self.assertIn('User "system:serviceaccount:%s:default"' % self.ns, t["message"])


if __name__ == "__main__":
    result = unittest.main(exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if ENV is None:
        # ctest's SKIP_RETURN_CODE: the pure-function tests passed, the live ones could not run
        # (under TOCSIN_NO_SKIP, CI, that is a failure).
        print("kubelet_test: live tests skipped: no control plane (run tools/k8s/up.sh or set "
              "TOCSIN_K8S_ENV)", file=sys.stderr)
        sys.exit(1 if no_skip() else 77)
