#!/usr/bin/env python3
"""The test kubelet: runs the pods that a real Kubernetes 1.20 control plane binds to test nodes.

Test infrastructure, not product (issue 15). Python 3.11 standard library only. Started by
tools/k8s/up.sh; `python3 tools/k8s/kubelet.py --help` lists the flags.

What it does, as the real kubelet does it:
- Registers every node of --nodes (a v1 NodeList): creates the Node with the admin client certificate
  (labels, annotations, taints), reports nodes/status with the node's own bearer token (capacity,
  allocatable, nodeInfo, addresses, daemonEndpoints, Ready/MemoryPressure/DiskPressure/PIDPressure with
  heartbeats), renews the node Lease in kube-node-lease every 10 s, and removes the
  node.kubernetes.io/not-ready taint that the TaintNodesByCondition admission plugin adds at creation
  (with the admin certificate: NodeRestriction forbids a node to change its own taints).
- Watches the pods bound to each node (list, then watch from the resourceVersion; resumes on drop,
  relists on 410) and runs every container's command + args as a real process (the image is ignored;
  an image whose name contains "tocsin" runs --tocsin). Init containers first, in order. Env from
  values, fieldRef, resourceFieldRef, secretKeyRef, configMapKeyRef and envFrom, with $(VAR) expansion.
- Reports pod status: phase, conditions, containerStatuses (restartCount, waiting ContainerCreating /
  CrashLoopBackOff, terminated with the termination message, lastState), podIP, hostIP, startTime.
  Back-off 10 s doubling to 5 min, reset after 10 min, as the kubelet's flowcontrol.Backoff.
- Serves GET /containerLogs/NS/POD/CONTAINER (follow, tailLines, previous, timestamps, limitBytes,
  sinceSeconds) and /healthz over HTTPS with client certificates, so `kubectl logs` works.
- On pod deletion: SIGTERM to the container process groups, SIGKILL after the grace period (at most
  30 s), then deletes the pod object with gracePeriodSeconds=0 as the node.

As root: one mount namespace per container, where secret, configMap, downwardAPI, emptyDir, projected
and hostPath volumes are bind-mounted at their mountPath (mount points missing on the host are created
there, empty, and left: the host's filesystem is the containers' root filesystem). With --netns-prefix
P, node i (1-based, NodeList order) gets network namespace Pi with eth0 = 10.78.0.i/24 on the bridge
Pbr (10.78.0.254/24 in the root namespace), its kubelet API on 10.78.0.i:10250 and, for the
`kubernetes` Service, a forwarder on 127.0.0.1:<apiserver port> inside the namespace to the apiserver.
Nothing is routed anywhere else. --subnet (default 10.78.0) moves the /24 so that two test kubelets
can run at once (the kubelet serving certificate needs SANs for the node addresses). Without root:
no namespaces, no mounts (the container log says so), every node's address is 127.0.0.1 and all
nodes share one kubelet API port.

Networking for multi-pod workloads: pods share their node's network namespace (as hostNetwork pods
do), so status.podIP == status.hostIP == the node's address and two pods on one node cannot listen on
the same port. There is no cluster DNS and no kube-proxy: a workload finds its rank 0 either from the
API (the rank 0 pod's status.podIP, e.g. read by an init container through KUBERNETES_SERVICE_HOST and
the mounted ServiceAccount token) or from a fixed node address: pin rank 0 to node i with
spec.nodeName or a nodeSelector and use 10.78.0.i (127.0.0.1 without namespaces).

Probes: an exec readinessProbe runs in the container's namespaces (period, timeout, thresholds);
without one, or with an httpGet/tcpSocket one, a container is ready when it runs. Liveness and startup
probes are ignored.

The ready file (--ready-file) is JSON: {"nodes": {NAME: ADDRESS}, "kubeletPort", "pid", "root",
"namespaces"}. On SIGTERM every container process group gets SIGTERM, then SIGKILL after 2 s, and the
namespaces and bridge are deleted. A SIGKILLed kubelet leaves its namespaces (the next start with the
same prefix deletes them); its containers' direct processes die with it (PR_SET_PDEATHSIG), what they
started in the background may not.

Not done: lifecycle hooks, resource limits, service links other than `kubernetes`, image pulls, PID
and UTS namespaces, hostname.
"""

import argparse
import base64
import collections
import ctypes
import datetime
import errno
import hashlib
import http.client
import http.server
import json
import os
import select
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse

LOG_CAP = 10 * 1024 * 1024
LINE_SPLIT = 16 * 1024
MAX_TERMINATION_MESSAGE = 4096
FALLBACK_LINES = 80
FALLBACK_BYTES = 2048
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0
LEASE_SECONDS = 40
HEARTBEAT = 10.0
API_TIMEOUT = 15.0
MAX_GRACE = 30
KUBELET_PORT = 10250
POD_LOG_ROOT = "/var/log/pods"  # hostPath volumes of it get the node's own (see Volumes.prepare)
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1


def log(msg):
    sys.stderr.write("kubelet %s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


# ----------------------------------------------------------------------------------------------
# Pure functions (unit-tested in tests/k8s/kubelet_test.py)

def rfc3339(t):
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def nano_time(t):
    """The CRI log timestamp: RFC 3339 with nanoseconds."""
    dt = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%09dZ" % int(round((t % 1) * 1e9) % 1000000000)


def parse_time(s):
    if not s:
        return None
    s = s.rstrip("Z").split(".")[0]
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def go_duration(seconds):
    """Go's time.Duration.String() for whole seconds: 10s, 1m20s, 5m0s."""
    s = int(seconds)
    if s < 60:
        return "%ds" % s
    m, s = divmod(s, 60)
    if m < 60:
        return "%dm%ds" % (m, s)
    h, m = divmod(m, 60)
    return "%dh%dm%ds" % (h, m, s)


class Backoff:
    """client-go's flowcontrol.Backoff as the kubelet uses it (10 s doubling to 5 min; an entry not
    updated for 2 * max = 10 min expires)."""

    def __init__(self, initial=BACKOFF_INITIAL, maximum=BACKOFF_MAX):
        self.initial, self.maximum = initial, maximum
        self.delay = None
        self.last_update = None

    def _expired(self, event_time):
        return event_time - self.last_update > 2 * self.maximum

    def in_backoff_since(self, event_time, now):
        """True while `now` is within the current delay after `event_time` (the container's finish)."""
        if self.delay is None or self._expired(event_time):
            return False
        return now - event_time < self.delay

    def next(self, now):
        if self.delay is None or self._expired(now):
            self.delay = self.initial
        else:
            self.delay = min(self.delay * 2, self.maximum)
        self.last_update = now

    def get(self):
        return self.delay or 0


def should_restart(restart_policy, exit_code):
    if restart_policy == "Always":
        return True
    if restart_policy == "OnFailure":
        return exit_code != 0
    return False


def pod_phase(restart_policy, init_statuses, statuses, init_done):
    """kubelet's getPhase (1.20) over the container statuses we report."""
    for s in init_statuses:
        t = s.get("state", {}).get("terminated")
        if t and t.get("exitCode") != 0 and restart_policy == "Never":
            return "Failed"
    if not init_done:
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for s in statuses:
        st = s.get("state", {})
        if "running" in st:
            running += 1
        elif "terminated" in st:
            stopped += 1
            if st["terminated"].get("exitCode") == 0:
                succeeded += 1
        elif "waiting" in st:
            if s.get("lastState", {}).get("terminated"):
                stopped += 1
            else:
                waiting += 1
    if waiting > 0:
        return "Pending"
    if running > 0:
        return "Running"
    if stopped > 0:
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if restart_policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def pod_conditions(old_conditions, phase, init_names_incomplete, unready_names, now):
    """Initialized / ContainersReady / Ready (and PodScheduled kept), with lastTransitionTime kept
    while a condition's status does not change."""
    old = {c.get("type"): c for c in old_conditions or []}
    out = []

    def cond(ctype, status, reason=None, message=None):
        c = {"type": ctype, "status": status, "lastProbeTime": None}
        prev = old.get(ctype)
        c["lastTransitionTime"] = (prev.get("lastTransitionTime") if prev and prev.get("status") == status
                                   and prev.get("lastTransitionTime") else rfc3339(now))
        if reason:
            c["reason"] = reason
        if message:
            c["message"] = message
        out.append(c)

    if init_names_incomplete:
        cond("Initialized", "False", "ContainersNotInitialized",
             "containers with incomplete status: [%s]" % " ".join(init_names_incomplete))
    elif phase == "Succeeded":
        cond("Initialized", "True", "PodCompleted")
    else:
        cond("Initialized", "True")
    for ctype in ("Ready", "ContainersReady"):
        if phase in ("Succeeded", "Failed"):
            cond(ctype, "False", "PodCompleted")
        elif unready_names:
            cond(ctype, "False", "ContainersNotReady",
                 "containers with unready status: [%s]" % " ".join(unready_names))
        else:
            cond(ctype, "True")
    ps = old.get("PodScheduled")
    if ps:
        out.append(ps)
    else:
        cond("PodScheduled", "True")
    order = {"Initialized": 0, "Ready": 1, "ContainersReady": 2, "PodScheduled": 3}
    return sorted(out, key=lambda c: order[c["type"]])


def expand_vars(s, env):
    """Kubernetes $(VAR) expansion: $(VAR) is replaced when VAR is defined, $$ is an escaped $."""
    out = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "$" and i + 1 < n:
            nxt = s[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                j = s.find(")", i + 2)
                if j != -1:
                    name = s[i + 2:j]
                    if name in env:
                        out.append(env[name])
                    else:
                        out.append(s[i:j + 1])
                    i = j + 1
                    continue
        out.append(c)
        i += 1
    return "".join(out)


def field_ref(pod, path, pod_ip, host_ip):
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
    }
    if path in simple:
        return simple[path]
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path == prefix:
            items = meta.get(key) or {}
            return "\n".join('%s="%s"' % (k, items[k]) for k in sorted(items))
        if path.startswith(prefix + "[") and path.endswith("]"):
            k = path[len(prefix) + 1:-1].strip("'\"")
            return (meta.get(key) or {}).get(k, "")
    raise ValueError("unsupported fieldRef %s" % path)


def parse_quantity(q):
    """A resource quantity as a float of base units (cpu in cores, memory in bytes)."""
    q = str(q)
    suffixes = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
                "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
                "E": 1e18}
    for suf in sorted(suffixes, key=len, reverse=True):
        if q.endswith(suf):
            return float(q[:-len(suf)]) * suffixes[suf]
    return float(q)


def resource_field(container, node_allocatable, ref):
    """resourceFieldRef: limits/requests of a container, the node's allocatable for absent limits."""
    res = ref.get("resource", "")
    divisor = parse_quantity(ref.get("divisor") or "1")
    kind, _, name = res.partition(".")
    resources = container.get("resources", {})
    val = (resources.get(kind) or {}).get(name)
    if val is None and kind == "limits":
        val = node_allocatable.get(name)
    if val is None:
        val = "0"
    v = parse_quantity(val) / divisor
    return str(int(-(-v // 1)))  # ceiling, as the kubelet rounds up


def resolve_argv(container, image_is_tocsin, tocsin):
    """The process to run: (argv, note). note is a line for the container log or None."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    if image_is_tocsin:
        if not command:
            return [tocsin] + args, None
        if os.path.basename(command[0]) == "tocsin":
            return [tocsin] + command[1:] + args, None
        return command + args, None
    if not command:
        return None, ("test kubelet: image %s has no known entrypoint (no command); waiting until "
                      "killed" % container.get("image", ""))
    return command + args, None


def cri_line(t, stream, content, partial):
    return b"%s %s %s %s\n" % (nano_time(t).encode(), stream, b"P" if partial else b"F", content)


def parse_cri(data):
    """[(timestamp str, stream, content bytes, full bool)] from CRI-format log bytes."""
    out = []
    for line in data.split(b"\n"):
        if not line:
            continue
        parts = line.split(b" ", 3)
        if len(parts) < 4:
            parts += [b""] * (4 - len(parts))
        out.append((parts[0].decode(errors="replace"), parts[1], parts[2], parts[3]))
    return [(ts, st, content, tag != b"P") for ts, st, tag, content in out]


def render_log(data, tail_lines=None, timestamps=False, since=None, limit_bytes=None):
    """The bytes `kubectl logs` shows for a CRI log: whole lines, the last tail_lines of them."""
    lines = []
    cur = []
    first_ts = None
    for ts, _stream, content, full in parse_cri(data):
        if first_ts is None:
            first_ts = ts
        cur.append(content)
        if full:
            lines.append((first_ts, b"".join(cur) + b"\n"))
            cur, first_ts = [], None
    if cur:
        lines.append((first_ts, b"".join(cur)))
    if since is not None:
        lines = [l for l in lines if (parse_time(l[0]) or 0) >= since]
    if tail_lines is not None:
        lines = lines[-tail_lines:] if tail_lines > 0 else []
    out = b"".join((ts.encode() + b" " if timestamps else b"") + c for ts, c in lines)
    if limit_bytes is not None:
        out = out[:limit_bytes]
    return out


def termination_message(file_bytes, policy, exit_code, log_bytes):
    msg = file_bytes[-MAX_TERMINATION_MESSAGE:] if file_bytes else b""
    if not msg and policy == "FallbackToLogsOnError" and exit_code != 0 and log_bytes:
        msg = render_log(log_bytes, tail_lines=FALLBACK_LINES, limit_bytes=FALLBACK_BYTES)
    return msg.decode(errors="replace")


# ----------------------------------------------------------------------------------------------
# Namespaces (ctypes)

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
    return _libc


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def setns(fd, nstype):
    _check(libc().setns(fd, nstype), "setns")


def socket_in_netns(netns_path, addr, port, backlog=128):
    """A listening TCP socket created inside a network namespace. The switch happens on a short-lived
    thread of its own (setns changes only the calling thread), which switches back before it ends."""
    result = {}

    def work():
        root = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(netns_path, os.O_RDONLY)
        try:
            setns(target, CLONE_NEWNET)
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((addr, port))
                s.listen(backlog)
                result["sock"] = s
            finally:
                setns(root, CLONE_NEWNET)
        except Exception as e:  # noqa: BLE001 - reported to the caller
            result["error"] = e
        finally:
            os.close(root)
            os.close(target)

    t = threading.Thread(target=work, name="setns")
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["sock"]


def run_ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=15, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


class Network:
    def __init__(self, prefix, count, subnet):
        self.prefix = prefix
        self.count = count
        self.subnet = subnet
        self.bridge = prefix + "br"

    def ns(self, i):
        return "%s%d" % (self.prefix, i)

    def path(self, i):
        return "/run/netns/" + self.ns(i)

    def address(self, i):
        return "%s.%d" % (self.subnet, i)

    def setup(self):
        if self.count > 253:
            raise RuntimeError("at most 253 nodes with network namespaces")
        if len(self.prefix) + len(str(self.count)) + 1 > 15:
            raise RuntimeError("--netns-prefix too long for interface names")
        self.teardown()
        routes = run_ip("-4", "route", "show", "%s.0/24" % self.subnet).stdout.strip()
        if routes:
            raise RuntimeError("subnet %s.0/24 is in use (%s): another test kubelet? give it another "
                               "--subnet" % (self.subnet, routes))
        run_ip("link", "add", self.bridge, "type", "bridge")
        run_ip("addr", "add", "%s.254/24" % self.subnet, "dev", self.bridge)
        run_ip("link", "set", self.bridge, "up")
        for i in range(1, self.count + 1):
            ns, host = self.ns(i), "%sh" % self.ns(i)
            run_ip("netns", "add", ns)
            run_ip("link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns)
            run_ip("-n", ns, "addr", "add", "%s/24" % self.address(i), "dev", "eth0")
            run_ip("-n", ns, "link", "set", "lo", "up")
            run_ip("-n", ns, "link", "set", "eth0", "up")
            run_ip("link", "set", host, "master", self.bridge, "up")

    def teardown(self):
        for i in range(1, self.count + 1):
            if os.path.exists(self.path(i)):
                run_ip("netns", "del", self.ns(i), check=False)
            run_ip("link", "del", "%sh" % self.ns(i), check=False)
        if os.path.exists("/sys/class/net/" + self.bridge):
            run_ip("link", "del", self.bridge, check=False)


class Forwarder:
    """The `kubernetes` Service inside a node namespace: 127.0.0.1:PORT there -> 127.0.0.1:PORT here."""

    MAX_CONNS = 128

    def __init__(self, sock, port, stop):
        self.sock, self.port, self.stop = sock, port, stop
        self.conns = threading.Semaphore(self.MAX_CONNS)
        self.sock.settimeout(0.5)
        threading.Thread(target=self.serve, daemon=True, name="forwarder").start()

    def serve(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if not self.conns.acquire(blocking=False):
                c.close()
                continue
            threading.Thread(target=self.pipe, args=(c,), daemon=True).start()

    def pipe(self, c):
        try:
            up = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            up.settimeout(None)
            c.settimeout(None)
            socks = [c, up]
            while not self.stop.is_set():
                r, _, _ = select.select(socks, [], [], 1.0)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    (up if s is c else c).sendall(data)
        except OSError:
            pass
        finally:
            for s in (c, locals().get("up")):
                try:
                    if s is not None:
                        s.close()
                except OSError:
                    pass
            self.conns.release()


# ----------------------------------------------------------------------------------------------
# API client

class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %s: %s" % (status, str(body)[:300]))
        self.status, self.body = status, body


class Api:
    def __init__(self, server, ca, cert=None, key=None, token=None):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca)
        if cert:
            self.ctx.load_cert_chain(cert, key)
        self.token = token

    def _conn(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def _headers(self, ctype=None):
        h = {"Accept": "application/json", "User-Agent": "tocsin-test-kubelet/v1.20.2"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if ctype:
            h["Content-Type"] = ctype
        return h

    def call(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        conn = self._conn(API_TIMEOUT)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers=self._headers(ctype if data else None))
            resp = conn.getresponse()
            raw = resp.read(64 * 1024 * 1024)
        finally:
            conn.close()
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = raw[:300].decode(errors="replace")
        if resp.status not in ok:
            raise ApiError(resp.status, obj)
        return obj

    def get(self, path):
        return self.call("GET", path)

    def watch(self, path, stop, read_timeout):
        """Yields watch events until the server ends the stream."""
        conn = self._conn(read_timeout)
        try:
            conn.request("GET", path, headers=self._headers())
            resp = conn.getresponse()
            if resp.status != 200:
                raise ApiError(resp.status, resp.read(4096))
            while not stop.is_set():
                line = resp.readline(64 * 1024 * 1024)
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


# ----------------------------------------------------------------------------------------------
# Container logs

class LogPump:
    """Copies a container's stdout and stderr pipes to its CRI-format log file, capped."""

    def __init__(self, path, out_fd, err_fd, cap=LOG_CAP):
        self.path, self.cap = path, cap
        self.f = open(path, "ab")
        self.size = self.f.tell()
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.fds = {out_fd: b"stdout", err_fd: b"stderr"}
        self.bufs = {out_fd: b"", err_fd: b""}
        self.stop_at = None
        threading.Thread(target=self.run, daemon=True, name="logpump").start()

    def note(self, text):
        self._emit(b"stdout", text.encode(), False)

    def _emit(self, stream, content, partial):
        with self.lock:
            if self.size >= self.cap:
                return
            line = cri_line(time.time(), stream, content, partial)
            if self.size + len(line) > self.cap:
                line = cri_line(time.time(), b"stderr",
                                b"test kubelet: log truncated at %d bytes" % self.cap, False)
                self.size = self.cap
            else:
                self.size += len(line)
            self.f.write(line)
            self.f.flush()

    def finish_after(self, seconds):
        """Stop reading `seconds` from now even if a leftover process keeps a pipe open."""
        self.stop_at = time.time() + seconds

    def run(self):
        try:
            fds = list(self.fds)
            while fds:
                if self.stop_at is not None and time.time() > self.stop_at:
                    break
                r, _, _ = select.select(fds, [], [], 0.5)
                for fd in r:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        data = b""
                    if not data:
                        fds.remove(fd)
                        continue
                    buf = self.bufs[fd] + data
                    while True:
                        nl = buf.find(b"\n")
                        if nl == -1 or nl > LINE_SPLIT:
                            break
                        self._emit(self.fds[fd], buf[:nl], False)
                        buf = buf[nl + 1:]
                    while len(buf) > LINE_SPLIT:
                        self._emit(self.fds[fd], buf[:LINE_SPLIT], True)
                        buf = buf[LINE_SPLIT:]
                    self.bufs[fd] = buf
            for fd, buf in self.bufs.items():
                if buf:
                    self._emit(self.fds[fd], buf, False)
        finally:
            for fd in self.fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            with self.lock:
                self.f.close()
            self.done.set()


# ----------------------------------------------------------------------------------------------
# Pods

class Container:
    def __init__(self, spec, init):
        self.spec, self.name, self.init = spec, spec["name"], init
        self.proc = None
        self.pump = None
        self.cid = ""
        self.started_at = None
        self.waiting = ("ContainerCreating", None)
        self.term = None         # the current instance's terminated state
        self.last_term = None
        self.restarts = 0
        self.instances = 0       # how many times started
        self.backoff = Backoff()
        self.log_path = None
        self.term_file = None
        self.probe_ok = False    # the exec readinessProbe's verdict for the current instance

    def exit_code(self):
        return self.term["exitCode"] if self.term else None


class PodWorker:
    def __init__(self, kubelet, node, pod):
        self.k, self.node, self.pod = kubelet, node, pod
        meta = pod["metadata"]
        self.uid, self.ns, self.name = meta["uid"], meta["namespace"], meta["name"]
        self.key = "%s/%s" % (self.ns, self.name)
        self.dir = os.path.join(kubelet.state, "pods", self.uid)
        spec = pod["spec"]
        self.policy = spec.get("restartPolicy", "Always")
        self.inits = [Container(c, True) for c in spec.get("initContainers") or []]
        self.ctrs = [Container(c, False) for c in spec.get("containers") or []]
        self.start_time = parse_time((pod.get("status") or {}).get("startTime")) or time.time()
        self.wake = threading.Event()
        self.vanished = False
        self.volumes_ready = False
        self.volume_error = None
        self.last_sent = None
        self.conditions = (pod.get("status") or {}).get("conditions") or []
        self.done = False
        self.thread = threading.Thread(target=self.run, daemon=True, name="pod " + self.key)

    # -- API-facing
    def update(self, pod):
        self.pod = pod
        self.wake.set()

    def vanish(self):
        self.vanished = True
        self.wake.set()

    def container(self, name):
        for c in self.inits + self.ctrs:
            if c.name == name:
                return c
        return None

    # -- main loop
    def run(self):
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        log("pod %s on %s: starting" % (self.key, self.node.name))
        try:
            while not self.k.stop.is_set():
                try:
                    if self.vanished or self.pod["metadata"].get("deletionTimestamp"):
                        self.terminate()
                        return
                    self.reap()
                    self.step()
                    self.report()
                except Exception as e:  # noqa: BLE001 - one pod never kills the kubelet
                    log("pod %s: %s" % (self.key, e))
                    if not isinstance(e, (ApiError, OSError)):
                        traceback.print_exc()
                self.wake.wait(0.25 if self.any_running() else 1.0)
                self.wake.clear()
        finally:
            self.done = True
            if not self.k.stop.is_set():
                self.kill_all(0)

    def any_running(self):
        return any(c.proc is not None for c in self.inits + self.ctrs)

    def init_done(self):
        return all(c.term is not None and c.term["exitCode"] == 0 for c in self.inits)

    def reap(self):
        for c in self.inits + self.ctrs:
            if c.proc is None or c.proc.poll() is None:
                continue
            self.finish(c)

    def finish(self, c):
        rc = c.proc.returncode
        code = rc if rc >= 0 else 128 - rc
        try:
            os.killpg(c.proc.pid, signal.SIGKILL)  # whatever the main process left behind
        except OSError:
            pass
        self.k.release_proc(c.proc)
        c.proc = None
        now = time.time()
        c.pump.finish_after(2)
        c.pump.done.wait(3)
        msg_file = b""
        if c.term_file:
            try:
                with open(c.term_file, "rb") as f:
                    f.seek(0, os.SEEK_END)
                    size = f.tell()
                    f.seek(max(0, size - MAX_TERMINATION_MESSAGE))
                    msg_file = f.read()
            except OSError:
                pass
        log_bytes = b""
        if c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError" and code != 0:
            try:
                with open(c.log_path, "rb") as f:
                    log_bytes = f.read()
            except OSError:
                pass
        t = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
             "startedAt": rfc3339(c.started_at), "finishedAt": rfc3339(now), "containerID": c.cid,
             "_finished": now}
        message = termination_message(msg_file, c.spec.get("terminationMessagePolicy"), code, log_bytes)
        if message:
            t["message"] = message
        if code > 128:
            t["signal"] = code - 128
        c.term = t
        log("pod %s container %s exited %d" % (self.key, c.name, code))

    def step(self):
        now = time.time()
        if not self.volumes_ready:
            try:
                self.k.volumes.prepare(self)
                self.volumes_ready = True
                self.volume_error = None
            except Exception as e:  # noqa: BLE001
                self.volume_error = "test kubelet: volumes not ready: %s" % e
                for c in self.inits + self.ctrs:
                    c.waiting = ("ContainerCreating", self.volume_error)
                return
        for c in self.inits:
            if c.term is not None and c.term["exitCode"] == 0:
                continue
            if c.proc is not None:
                return
            if c.term is not None:
                if self.policy == "Never":
                    return  # pod Failed
                if not self.restart_due(c, now):
                    return
            self.start(c)
            return
        for c in self.ctrs:
            if c.proc is not None:
                continue
            if c.term is not None:
                if not should_restart(self.policy, c.term["exitCode"]):
                    continue
                if not self.restart_due(c, now):
                    continue
            self.start(c)

    def restart_due(self, c, now):
        """kubelet's doBackOff: CrashLoopBackOff while within the back-off after the last finish."""
        finished = c.term["_finished"]
        if c.backoff.in_backoff_since(finished, now):
            c.waiting = ("CrashLoopBackOff", "back-off %s restarting failed container=%s pod=%s_%s(%s)"
                         % (go_duration(c.backoff.get()), c.name, self.name, self.ns, self.uid))
            return False
        c.backoff.next(now)
        return True

    def start(self, c):
        try:
            env = self.k.env_for(self, c.spec)
        except Exception as e:  # noqa: BLE001
            c.waiting = ("CreateContainerConfigError", str(e))
            return
        image = c.spec.get("image", "") or ""
        argv, note = resolve_argv(c.spec, "tocsin" in image, self.k.tocsin)
        if argv is not None:
            argv = [expand_vars(a, env) for a in argv]
        logdir = os.path.join(self.dir, "logs", c.name)
        os.makedirs(logdir, exist_ok=True)
        self.k.link_pod_logs(self)
        log_path = os.path.join(logdir, "%d.log" % c.instances)
        if os.path.exists(log_path):
            os.unlink(log_path)
        # Keep the current and the previous instance's logs, as the kubelet does.
        for old in os.listdir(logdir):
            if old.endswith(".log") and old[:-4].isdigit() and int(old[:-4]) < c.instances - 1:
                os.unlink(os.path.join(logdir, old))
        try:
            proc, term_file, pump = self.k.spawn(self, c, argv, note, env, log_path)
        except (OSError, RuntimeError) as e:
            if c.waiting != ("CreateContainerError", str(e)):
                log("pod %s container %s: %s" % (self.key, c.name, e))
            c.waiting = ("CreateContainerError", str(e))
            return
        if proc is None:
            c.waiting = ("ContainerCreating", "test kubelet: at its process cap (--max-procs %d)"
                         % self.k.max_procs)
            return
        if c.term is not None:
            c.last_term = c.term
            c.restarts += 1
        c.proc, c.term_file, c.pump, c.log_path = proc, term_file, pump, log_path
        c.instances += 1
        c.term = None
        c.started_at = time.time()
        c.cid = "tocsin-test://" + hashlib.sha256(
            ("%s/%s/%d/%f" % (self.uid, c.name, c.instances, c.started_at)).encode()).hexdigest()
        c.waiting = None
        c.probe_ok = False
        probe = c.spec.get("readinessProbe") or {}
        if "exec" in probe and not c.init:
            threading.Thread(target=self.probe_loop, args=(c, proc, probe), daemon=True,
                             name="probe " + c.name).start()
        log("pod %s container %s started (pid %d)" % (self.key, c.name, proc.pid))

    def probe_loop(self, c, proc, probe):
        """An exec readinessProbe, run in the container's namespaces while this instance runs."""
        with open(os.path.join(self.dir, "%s-%d.json" % (c.name, c.instances - 1))) as f:
            spec = json.load(f)
        spec["argv"] = probe["exec"].get("command") or ["false"]
        spec["notes"] = []
        spec["mounts"] = [m for m in spec["mounts"] if not m["dst"].endswith("termination-log")]
        spec_path = os.path.join(self.dir, "%s-%d-probe.json" % (c.name, c.instances - 1))
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        period = max(1, probe.get("periodSeconds", 10))
        timeout = max(1, probe.get("timeoutSeconds", 1))
        need_ok, need_bad = max(1, probe.get("successThreshold", 1)), max(1, probe.get("failureThreshold", 3))
        oks = bads = 0
        if self.k.stop.wait(probe.get("initialDelaySeconds", 0)):
            return
        while c.proc is proc and not self.k.stop.is_set():
            try:
                r = subprocess.run([sys.executable, "-I", os.path.abspath(__file__), "--exec-container",
                                    spec_path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=self.k.env_for(self, c.spec),
                                   timeout=timeout + 1, start_new_session=True)
                ok = r.returncode == 0
            except Exception:  # noqa: BLE001 - a probe that cannot run or times out fails
                ok = False
            oks, bads = (oks + 1, 0) if ok else (0, bads + 1)
            if c.proc is proc and (oks >= need_ok and not c.probe_ok or bads >= need_bad and c.probe_ok):
                c.probe_ok = ok
                self.wake.set()
            if self.k.stop.wait(period):
                return

    def container_status(self, c):
        image = c.spec.get("image", "") or ""
        s = {"name": c.name, "image": image,
             "imageID": "tocsin-test://sha256:" + hashlib.sha256(image.encode()).hexdigest()
             if c.instances else "",
             "ready": False, "restartCount": c.restarts, "started": False}
        if c.cid:
            s["containerID"] = c.cid
        if c.proc is not None:
            s["state"] = {"running": {"startedAt": rfc3339(c.started_at)}}
            s["ready"] = not c.init and ("exec" not in (c.spec.get("readinessProbe") or {})
                                         or c.probe_ok)
            s["started"] = True
        elif c.term is not None and (c.init and c.term["exitCode"] == 0
                                     or not self.will_restart(c)):
            s["state"] = {"terminated": {k: v for k, v in c.term.items() if not k.startswith("_")}}
            s["ready"] = c.init and c.term["exitCode"] == 0
        elif c.term is not None:
            reason, msg = c.waiting or ("CrashLoopBackOff", None)
            w = {"reason": reason}
            if msg:
                w["message"] = msg
            s["state"] = {"waiting": w}
            last = c.term
            s["lastState"] = {"terminated": {k: v for k, v in last.items() if not k.startswith("_")}}
        else:
            reason, msg = c.waiting or ("ContainerCreating", None)
            if not c.init and reason == "ContainerCreating" and not msg and not self.init_done():
                reason = "PodInitializing"
            w = {"reason": reason}
            if msg:
                w["message"] = msg
            s["state"] = {"waiting": w}
        if "lastState" not in s:
            s["lastState"] = ({"terminated": {k: v for k, v in c.last_term.items()
                                              if not k.startswith("_")}} if c.last_term else {})
        return s

    def will_restart(self, c):
        if self.vanished or self.pod["metadata"].get("deletionTimestamp"):
            return False
        if c.init:
            return self.policy != "Never"
        return should_restart(self.policy, c.term["exitCode"])

    def compute_status(self):
        now = time.time()
        inits = [self.container_status(c) for c in self.inits]
        ctrs = [self.container_status(c) for c in self.ctrs]
        phase = pod_phase(self.policy, inits, ctrs, self.init_done())
        incomplete = [c.name for c in self.inits if not (c.term and c.term["exitCode"] == 0)]
        unready = [s["name"] for s in ctrs if not s["ready"]]
        conds = pod_conditions(self.conditions, phase, incomplete, unready, now)
        ip = self.node.address
        st = {"phase": phase, "conditions": conds, "hostIP": ip, "podIP": ip, "podIPs": [{"ip": ip}],
              "startTime": rfc3339(self.start_time), "containerStatuses": ctrs}
        if inits:
            st["initContainerStatuses"] = inits
        return st

    def report(self):
        st = self.compute_status()
        if st == self.last_sent:
            return
        self.node.api.call("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (self.ns, self.name),
                           {"status": st}, ctype="application/strategic-merge-patch+json")
        self.last_sent = st
        self.conditions = st["conditions"]

    def kill_all(self, grace):
        procs = [c.proc for c in self.inits + self.ctrs if c.proc is not None]
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.time() + grace
        while time.time() < deadline and any(p.poll() is None for p in procs):
            if self.k.stop.is_set():
                break
            time.sleep(0.1)
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.reap()

    def terminate(self):
        meta, spec = self.pod["metadata"], self.pod["spec"]
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        grace = max(0, min(int(grace), MAX_GRACE))
        log("pod %s: %s, killing (grace %ds)" % (self.key, "vanished" if self.vanished else "deleted", grace))
        self.kill_all(grace)
        if not self.vanished:
            for attempt in range(5):
                try:
                    try:
                        if any(c.instances for c in self.inits + self.ctrs):
                            self.report()
                    except ApiError as e:
                        if e.status != 404:
                            raise
                    self.node.api.call(
                        "DELETE", "/api/v1/namespaces/%s/pods/%s" % (self.ns, self.name),
                        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                         "preconditions": {"uid": self.uid}}, ok=(200, 202, 404, 409))
                    break
                except (ApiError, OSError) as e:
                    log("pod %s: delete: %s" % (self.key, e))
                    if self.k.stop.wait(1 + attempt):
                        break
        self.k.forget(self)


# ----------------------------------------------------------------------------------------------
# Volumes

class Volumes:
    def __init__(self, kubelet):
        self.k = kubelet

    def prepare(self, w):
        """Materialises the pod's volumes under its state folder (idempotent; raises to retry)."""
        base = os.path.join(w.dir, "volumes")
        os.makedirs(base, exist_ok=True)
        w.volume_dirs = {}
        for v in w.pod["spec"].get("volumes") or []:
            name = v["name"]
            d = os.path.join(base, name)
            if "hostPath" in v:
                hp = v["hostPath"]
                path, kind = hp["path"], hp.get("type", "")
                if os.path.normpath(path) == POD_LOG_ROOT:
                    # The node's /var/log/pods is this kubelet's, per node, in the kubelet's layout
                    # (NS_POD_UID/CONTAINER/N.log in the CRI format), not the host's.
                    w.volume_dirs[name] = self.k.pod_log_root(w.node.name)
                    continue
                if kind == "DirectoryOrCreate" and self.k.root:
                    os.makedirs(path, exist_ok=True)
                elif kind == "FileOrCreate" and self.k.root and not os.path.exists(path):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    open(path, "a").close()
                w.volume_dirs[name] = path
                continue
            files = None
            if "emptyDir" in v:
                files = {}
            elif "secret" in v:
                files = self.secret_files(w, v["secret"], v["secret"].get("defaultMode", 0o644))
            elif "configMap" in v:
                files = self.configmap_files(w, v["configMap"], v["configMap"].get("defaultMode", 0o644))
            elif "downwardAPI" in v:
                files = self.downward_files(w, v["downwardAPI"], v["downwardAPI"].get("defaultMode", 0o644))
            elif "projected" in v:
                files = {}
                mode = v["projected"].get("defaultMode", 0o644)
                for src in v["projected"].get("sources") or []:
                    if "secret" in src:
                        files.update(self.secret_files(w, src["secret"], mode))
                    elif "configMap" in src:
                        files.update(self.configmap_files(w, src["configMap"], mode))
                    elif "downwardAPI" in src:
                        files.update(self.downward_files(w, src["downwardAPI"], mode))
                    elif "serviceAccountToken" in src:
                        files.update(self.token_file(w, src["serviceAccountToken"], mode))
            else:
                kind = [k for k in v if k != "name"]
                raise RuntimeError("volume %s: type %s is not supported by the test kubelet"
                                   % (name, ",".join(kind)))
            os.makedirs(d, exist_ok=True)
            for rel, (data, mode) in files.items():
                p = os.path.join(d, rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                tmp = p + ".tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.chmod(tmp, mode)
                os.replace(tmp, p)
            w.volume_dirs[name] = d

    @staticmethod
    def _items(data, items, mode):
        out = {}
        if items:
            for it in items:
                if it["key"] in data:
                    out[it["path"]] = (data[it["key"]], it.get("mode", mode))
                else:
                    raise RuntimeError("key %s not found" % it["key"])
        else:
            for k, val in data.items():
                out[k] = (val, mode)
        return out

    def _get(self, w, kind, name, optional):
        try:
            return w.node.api.get("/api/v1/namespaces/%s/%s/%s" % (w.ns, kind, name))
        except ApiError as e:
            if e.status == 404 and optional:
                return None
            raise

    def secret_files(self, w, src, mode):
        name = src.get("secretName") or src.get("name")
        obj = self._get(w, "secrets", name, src.get("optional"))
        if obj is None:
            return {}
        data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        return self._items(data, src.get("items"), mode)

    def configmap_files(self, w, src, mode):
        obj = self._get(w, "configmaps", src["name"], src.get("optional"))
        if obj is None:
            return {}
        data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        return self._items(data, src.get("items"), mode)

    def downward_files(self, w, src, mode):
        out = {}
        for it in src.get("items") or []:
            if "fieldRef" in it:
                val = field_ref(w.pod, it["fieldRef"]["fieldPath"], w.node.address, w.node.address)
            else:
                ref = it["resourceFieldRef"]
                c = next((c.spec for c in w.ctrs + w.inits if c.name == ref.get("containerName")),
                         w.ctrs[0].spec)
                val = resource_field(c, w.node.allocatable, ref)
            out[it["path"]] = (val.encode(), it.get("mode", mode))
        return out

    def token_file(self, w, src, mode):
        sa = w.pod["spec"].get("serviceAccountName") or "default"
        req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": src.get("expirationSeconds", 3600),
                        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": w.name,
                                           "uid": w.uid}}}
        if src.get("audience"):
            req["spec"]["audiences"] = [src["audience"]]
        obj = w.node.api.call("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (w.ns, sa), req)
        return {src["path"]: (obj["status"]["token"].encode(), mode)}


# ----------------------------------------------------------------------------------------------
# Nodes

class Node:
    def __init__(self, kubelet, index, obj, token):
        self.k = kubelet
        self.index = index
        self.obj = obj
        self.name = obj["metadata"]["name"]
        self.api = Api(kubelet.server, kubelet.ca, token=token)
        st = obj.get("status") or {}
        self.capacity = st.get("capacity") or {}
        self.allocatable = st.get("allocatable") or self.capacity
        self.address = "127.0.0.1"
        self.netns = None
        self.uid = None
        self.ready = False
        self.conditions = {}

    def node_info(self):
        info = dict((self.obj.get("status") or {}).get("nodeInfo") or {})
        defaults = {"machineID": hashlib.md5(self.name.encode()).hexdigest(),
                    "systemUUID": hashlib.md5(("uuid" + self.name).encode()).hexdigest(),
                    "bootID": self.k.boot_id, "kernelVersion": os.uname().release,
                    "osImage": "tocsin test kubelet", "containerRuntimeVersion": "tocsin-test://1.0",
                    "kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                    "operatingSystem": "linux", "architecture": "amd64"}
        for k, v in defaults.items():
            if not info.get(k):
                info[k] = v
        return info

    def register(self):
        admin = self.k.admin
        meta = self.obj["metadata"]
        try:
            node = admin.get("/api/v1/nodes/" + self.name)
        except ApiError as e:
            if e.status != 404:
                raise
            labels = dict(meta.get("labels") or {})
            for k, v in (("kubernetes.io/hostname", self.name), ("kubernetes.io/os", "linux"),
                         ("kubernetes.io/arch", "amd64"), ("beta.kubernetes.io/os", "linux"),
                         ("beta.kubernetes.io/arch", "amd64")):
                labels.setdefault(k, v)
            body = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": self.name, "labels": labels,
                                 "annotations": dict(meta.get("annotations") or {})},
                    "spec": {}}
            taints = (self.obj.get("spec") or {}).get("taints")
            if taints:
                body["spec"]["taints"] = [{k: v for k, v in t.items() if k != "timeAdded"} for t in taints]
            node = admin.call("POST", "/api/v1/nodes", body)
            log("node %s created" % self.name)
        self.uid = node["metadata"]["uid"]
        for c in (node.get("status") or {}).get("conditions") or []:
            self.conditions[c["type"]] = c

    def heartbeat(self):
        now = time.time()
        conds = []
        for ctype, status, reason, msg in (
                ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ("Ready", "True", "KubeletReady", "kubelet is posting ready status")):
            prev = self.conditions.get(ctype)
            ltt = prev["lastTransitionTime"] if prev and prev.get("status") == status else rfc3339(now)
            conds.append({"type": ctype, "status": status, "reason": reason, "message": msg,
                          "lastHeartbeatTime": rfc3339(now), "lastTransitionTime": ltt})
        status = {"capacity": self.capacity, "allocatable": self.allocatable,
                  "nodeInfo": self.node_info(),
                  "addresses": [{"type": "InternalIP", "address": self.address},
                                {"type": "Hostname", "address": self.name}],
                  "daemonEndpoints": {"kubeletEndpoint": {"Port": self.k.api_port(self)}},
                  "conditions": conds}
        node = self.api.call("PATCH", "/api/v1/nodes/%s/status" % self.name, {"status": status},
                             ctype="application/strategic-merge-patch+json")
        for c in (node.get("status") or {}).get("conditions") or []:
            self.conditions[c["type"]] = c
        self.renew_lease(now)
        self.remove_not_ready_taint(node)
        self.ready = True

    def remove_not_ready_taint(self, node):
        """With the admin certificate, guarded by the resourceVersion (retried on a conflict)."""
        wanted = {t.get("key") for t in (self.obj.get("spec") or {}).get("taints") or []}
        for _ in range(5):
            taints = (node.get("spec") or {}).get("taints") or []
            keep = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"
                    or "node.kubernetes.io/not-ready" in wanted]
            if len(keep) == len(taints):
                return
            try:
                self.k.admin.call("PATCH", "/api/v1/nodes/" + self.name,
                                  {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                   "spec": {"taints": keep or None}},
                                  ctype="application/merge-patch+json")
                log("node %s: removed the not-ready taint" % self.name)
                return
            except ApiError as e:
                if e.status != 409:
                    raise
                node = self.k.admin.get("/api/v1/nodes/" + self.name)
        raise RuntimeError("node %s: the not-ready taint: conflicts" % self.name)

    def renew_lease(self, now):
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + self.name
        try:
            lease = self.api.get(path)
        except ApiError as e:
            if e.status != 404:
                raise
            lease = None
        spec = {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_SECONDS,
                "renewTime": micro_time(now)}
        if lease is None:
            self.api.call("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                          {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": {"name": self.name, "namespace": "kube-node-lease",
                                        "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                                             "name": self.name, "uid": self.uid}]},
                           "spec": spec})
        else:
            lease["spec"].update(spec)
            self.api.call("PUT", path, lease)

    def run_status(self):
        while not self.k.stop.is_set():
            try:
                if self.uid is None:
                    self.register()
                self.heartbeat()
                wait = HEARTBEAT
            except Exception as e:  # noqa: BLE001
                log("node %s: %s" % (self.name, e))
                if isinstance(e, ApiError) and e.status == 404:
                    self.uid = None  # the Node was deleted: register it again
                wait = 2
            self.k.ready_changed.set()
            self.k.stop.wait(wait)

    def run_pods(self):
        sel = urllib.parse.quote("spec.nodeName=" + self.name)
        rv = None
        while not self.k.stop.is_set():
            try:
                if rv is None:
                    lst = self.api.get("/api/v1/pods?fieldSelector=" + sel)
                    rv = lst["metadata"]["resourceVersion"]
                    self.k.sync_pods(self, lst.get("items") or [])
                path = ("/api/v1/pods?fieldSelector=%s&watch=1&allowWatchBookmarks=true"
                        "&timeoutSeconds=300&resourceVersion=%s" % (sel, rv))
                for ev in self.api.watch(path, self.k.stop, 330):
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            rv = None
                        else:
                            log("node %s: watch error %s" % (self.name, obj.get("message")))
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if typ in ("ADDED", "MODIFIED"):
                        self.k.pod_event(self, obj)
                    elif typ == "DELETED":
                        self.k.pod_deleted(obj)
            except ApiError as e:
                if e.status == 410:
                    rv = None
                log("node %s: pods: %s" % (self.name, e))
                self.k.stop.wait(1)
            except Exception as e:  # noqa: BLE001
                log("node %s: pods: %s" % (self.name, e))
                self.k.stop.wait(1)


# ----------------------------------------------------------------------------------------------
# Kubelet API (logs)

class KubeletServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = False
    MAX_REQUESTS = 64

    def __init__(self, sock, ctx, kubelet):
        self.ctx, self.k = ctx, kubelet
        self.slots = threading.Semaphore(self.MAX_REQUESTS)
        http.server.HTTPServer.__init__(self, sock.getsockname(), Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.server_address = sock.getsockname()

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def finish_request(self, request, client_address):
        request.settimeout(30)
        tls = self.ctx.wrap_socket(request, server_side=True)
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        e = sys.exc_info()[1]
        if not isinstance(e, (ssl.SSLError, ConnectionError, socket.timeout, BrokenPipeError)):
            log("kubelet API: %s" % e)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_text(self, code, text):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path in ("/healthz", "/healthz/ping"):
            return self.send_text(200, "ok")
        parts = u.path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            return self.send_text(404, "404 page not found\n")
        ns, pod, cname = [urllib.parse.unquote(p) for p in parts[1:]]
        k = self.server.k

        def flag(name):
            return (q.get(name) or ["false"])[0].lower() in ("true", "1")

        def num(name):
            v = (q.get(name) or [None])[0]
            return int(v) if v not in (None, "") else None
        try:
            tail, limit, since_s = num("tailLines"), num("limitBytes"), num("sinceSeconds")
        except ValueError:
            return self.send_text(400, "bad number\n")
        since = time.time() - since_s if since_s is not None else None
        since_time = (q.get("sinceTime") or [None])[0]
        if since_time:
            since = parse_time(since_time)
        w = k.find_pod(ns, pod)
        if w is None:
            return self.send_text(404, "pod %s/%s not found\n" % (ns, pod))
        c = w.container(cname)
        if c is None:
            return self.send_text(404, "container %s is not valid for pod %s\n" % (cname, pod))
        if c.instances == 0:
            return self.send_text(400, 'container "%s" in pod "%s" is waiting to start: %s\n'
                                  % (cname, pod, (c.waiting or ("ContainerCreating",))[0]))
        idx = c.instances - 1
        if flag("previous"):
            idx -= 1
            if idx < 0:
                return self.send_text(400, 'previous terminated container "%s" in pod "%s" not found\n'
                                      % (cname, pod))
        path = os.path.join(w.dir, "logs", cname, "%d.log" % idx)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        follow = flag("follow") and not flag("previous")
        ts = flag("timestamps")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Connection", "close")
        self.close_connection = True
        if not follow:
            body = render_log(data, tail, ts, since, limit)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.end_headers()
        # Whole lines only; the tail of a partial line waits for the next read.
        cut = data.rfind(b"\n") + 1
        body = render_log(data[:cut], tail, ts, since, limit)
        sent = len(body)
        self.wfile.write(body)
        self.wfile.flush()
        offset = cut
        sock = self.connection
        while not k.stop.is_set():
            if limit is not None and sent >= limit:
                return
            with open(path, "rb") as f:
                f.seek(offset)
                more = f.read(1024 * 1024)
            cut = more.rfind(b"\n") + 1
            if cut:
                chunk = render_log(more[:cut], None, ts)
                if limit is not None:
                    chunk = chunk[:limit - sent]
                self.wfile.write(chunk)
                self.wfile.flush()
                sent += len(chunk)
                offset += cut
                continue
            instance_over = c.instances - 1 != idx or c.proc is None
            if instance_over and (c.pump is None or c.pump.done.is_set()):
                return
            r, _, _ = select.select([sock], [], [], 0.3)
            if r:
                try:
                    sock.settimeout(0.05)
                    if sock.recv(1) == b"":
                        return
                except (socket.timeout, ssl.SSLWantReadError):
                    pass
                except OSError:
                    return


# ----------------------------------------------------------------------------------------------
# The kubelet

class Kubelet:
    def __init__(self, a):
        self.a = a
        self.server = a.server
        self.ca = a.ca
        self.state = os.path.abspath(a.state)
        self.tocsin = os.path.abspath(a.tocsin) if a.tocsin else "tocsin"
        self.max_procs = a.max_procs
        self.root = os.geteuid() == 0
        self.stop = threading.Event()
        self.ready_changed = threading.Event()
        self.admin = Api(a.server, a.ca, cert=a.admin_cert, key=a.admin_key)
        self.api_server_port = urllib.parse.urlsplit(a.server).port or 443
        self.lock = threading.Lock()
        self.procs = {}          # pid -> Popen
        self.workers = {}        # uid -> PodWorker
        self.finished = set()    # uids whose pods ran to the end or were killed: never restarted
        self.volumes = Volumes(self)
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                self.boot_id = f.read().strip()
        except OSError:
            self.boot_id = "unknown"
        with open(a.node_tokens) as f:
            tokens = json.load(f)
        with open(a.nodes) as f:
            nodelist = json.load(f)
        items = [i for i in nodelist.get("items", []) if i.get("kind", "Node") == "Node"]
        if not items:
            raise SystemExit("kubelet: no nodes in %s" % a.nodes)
        self.nodes = []
        for i, obj in enumerate(items, 1):
            name = obj["metadata"]["name"]
            if name not in tokens:
                raise SystemExit("kubelet: no token for node %s in %s" % (name, a.node_tokens))
            self.nodes.append(Node(self, i, obj, tokens[name]))
        self.network = None
        if self.root and a.netns_prefix:
            self.network = Network(a.netns_prefix, len(self.nodes), a.subnet)
        self.servers = []
        self.shared_port = None
        self.created_paths = set()
        self.created_lock = threading.Lock()

    def pod_log_root(self, node):
        d = os.path.join(self.state, "var-log-pods", node)
        os.makedirs(d, exist_ok=True)
        return d

    def link_pod_logs(self, w):
        """NS_POD_UID in the node's pod-log root points at the pod's logs folder."""
        link = os.path.join(self.pod_log_root(w.node.name), "%s_%s_%s" % (w.ns, w.name, w.uid))
        if not os.path.lexists(link):
            try:
                os.symlink(os.path.join(w.dir, "logs"), link)
            except FileExistsError:
                pass

    def note_created(self, path):
        """Records the parts of a mount point that do not exist on the host (the child creates them)."""
        with self.created_lock:
            p = os.path.normpath(path)
            while p != "/" and not os.path.lexists(p):
                self.created_paths.add(p)
                p = os.path.dirname(p)

    def remove_created(self):
        """Removes the mount points this kubelet made on the host, deepest first, if still empty."""
        with self.created_lock:
            for p in sorted(self.created_paths, key=lambda x: x.count("/"), reverse=True):
                try:
                    if os.path.isdir(p) and not os.path.islink(p):
                        os.rmdir(p)
                    elif os.path.isfile(p) and os.path.getsize(p) == 0:
                        os.unlink(p)
                except OSError:
                    pass
            self.created_paths.clear()

    def api_port(self, node):
        return KUBELET_PORT if self.network else self.shared_port

    # -- processes
    def spawn(self, w, c, argv, note, env, log_path):
        term_file = None
        mounts = []
        notes = [note] if note else []
        tmp_path = c.spec.get("terminationMessagePath") or "/dev/termination-log"
        if self.root:
            tdir = os.path.join(w.dir, "termination")
            os.makedirs(tdir, exist_ok=True)
            term_file = os.path.join(tdir, "%s-%d" % (c.name, c.instances))
            open(term_file, "wb").close()
            for m in sorted(c.spec.get("volumeMounts") or [], key=lambda m: m["mountPath"].count("/")):
                src = w.volume_dirs.get(m["name"])
                if src is None:
                    raise RuntimeError("volumeMount %s: no such volume" % m["name"])
                sub = m.get("subPath") or (expand_vars(m["subPathExpr"], env) if m.get("subPathExpr") else "")
                if sub:
                    if sub.startswith("/") or ".." in sub.split("/"):
                        raise RuntimeError("subPath %s must be a relative path inside the volume" % sub)
                    src = os.path.join(src, sub)
                    if not os.path.exists(src):
                        os.makedirs(src)
                mounts.append({"src": src, "dst": m["mountPath"], "ro": bool(m.get("readOnly"))})
            mounts.append({"src": term_file, "dst": tmp_path, "ro": False})
            for m in mounts:
                self.note_created(m["dst"])
        else:
            if c.spec.get("volumeMounts"):
                notes.append("test kubelet: not root, volumes are not mounted (%s)"
                             % ", ".join(m["mountPath"] for m in c.spec["volumeMounts"]))
            d = os.path.dirname(tmp_path)
            if tmp_path != "/dev/termination-log" and os.path.isdir(d) and os.access(d, os.W_OK):
                term_file = tmp_path
                open(term_file, "wb").close()
            else:
                notes.append("test kubelet: not root, no termination message file (%s)" % tmp_path)
        spec = {"argv": argv, "notes": notes, "mounts": mounts,
                "netns": w.node.netns if self.network else None,
                "workingDir": c.spec.get("workingDir") or "/"}
        spec_path = os.path.join(w.dir, "%s-%d.json" % (c.name, c.instances))
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        with self.lock:
            if self.stop.is_set() or len(self.procs) >= self.max_procs:
                return None, None, None
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            try:
                proc = subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__), "--exec-container",
                                         spec_path], stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w,
                                        env=env, start_new_session=True, close_fds=True)
            finally:
                os.close(out_w)
                os.close(err_w)
            self.procs[proc.pid] = proc
        pump = LogPump(log_path, out_r, err_r)
        return proc, term_file, pump

    def release_proc(self, proc):
        with self.lock:
            self.procs.pop(proc.pid, None)

    def env_for(self, w, spec):
        pod, node = w.pod, w.node
        ip = node.address
        env = collections.OrderedDict()
        env["PATH"] = DEFAULT_PATH
        env["HOSTNAME"] = pod["spec"].get("hostname") or w.name
        env["HOME"] = "/root" if self.root else os.environ.get("HOME", "/")
        port = str(self.api_server_port)
        for k, v in (("KUBERNETES_SERVICE_HOST", "127.0.0.1"), ("KUBERNETES_SERVICE_PORT", port),
                     ("KUBERNETES_SERVICE_PORT_HTTPS", port), ("KUBERNETES_PORT", "tcp://127.0.0.1:" + port),
                     ("KUBERNETES_PORT_%s_TCP" % port, "tcp://127.0.0.1:" + port),
                     ("KUBERNETES_PORT_%s_TCP_PROTO" % port, "tcp"),
                     ("KUBERNETES_PORT_%s_TCP_PORT" % port, port),
                     ("KUBERNETES_PORT_%s_TCP_ADDR" % port, "127.0.0.1")):
            env[k] = v
        cache = {}

        def fetch(kind, name, optional):
            key = (kind, name)
            if key not in cache:
                try:
                    cache[key] = node.api.get("/api/v1/namespaces/%s/%s/%s" % (w.ns, kind, name))
                except ApiError as e:
                    if e.status == 404 and optional:
                        cache[key] = None
                    elif e.status == 404:
                        raise RuntimeError('%s "%s" not found' % (kind[:-1], name))
                    else:
                        raise
            return cache[key]

        def values(kind, obj):
            if obj is None:
                return {}
            if kind == "secrets":
                return {k: base64.b64decode(v).decode(errors="replace") for k, v in (obj.get("data") or {}).items()}
            return dict(obj.get("data") or {})

        for ef in spec.get("envFrom") or []:
            prefix = ef.get("prefix", "")
            for kind, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
                if key in ef:
                    ref = ef[key]
                    for k, v in values(kind, fetch(kind, ref["name"], ref.get("optional"))).items():
                        env[prefix + k] = v
        for e in spec.get("env") or []:
            name = e["name"]
            if "valueFrom" not in e:
                env[name] = expand_vars(e.get("value", ""), env)
                continue
            vf = e["valueFrom"]
            if "fieldRef" in vf:
                env[name] = field_ref(pod, vf["fieldRef"]["fieldPath"], ip, ip)
            elif "resourceFieldRef" in vf:
                env[name] = resource_field(spec, node.allocatable, vf["resourceFieldRef"])
            else:
                for kind, key in (("secrets", "secretKeyRef"), ("configmaps", "configMapKeyRef")):
                    if key in vf:
                        ref = vf[key]
                        vals = values(kind, fetch(kind, ref["name"], ref.get("optional")))
                        if ref["key"] in vals:
                            env[name] = vals[ref["key"]]
                        elif not ref.get("optional"):
                            raise RuntimeError("couldn't find key %s in %s %s/%s"
                                               % (ref["key"], kind[:-1].capitalize()
                                                  if kind == "secrets" else "ConfigMap", w.ns, ref["name"]))
        return dict(env)

    # -- pods
    def sync_pods(self, node, pods):
        uids = set()
        for p in pods:
            uids.add(p["metadata"]["uid"])
            self.pod_event(node, p)
        with self.lock:
            gone = [w for uid, w in self.workers.items() if w.node is node and uid not in uids]
        for w in gone:
            w.vanish()

    def pod_event(self, node, pod):
        uid = pod["metadata"]["uid"]
        with self.lock:
            w = self.workers.get(uid)
            if w is None:
                if uid in self.finished:
                    return
                phase = (pod.get("status") or {}).get("phase")
                if phase in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp"):
                    return  # ran before (a kubelet restart): never rerun; a deletion is finished below
                w = PodWorker(self, node, pod)
                self.workers[uid] = w
                w.thread.start()
                return
        w.update(pod)

    def pod_deleted(self, pod):
        with self.lock:
            w = self.workers.get(pod["metadata"]["uid"])
        if w is not None:
            w.vanish()

    def forget(self, w):
        with self.lock:
            self.workers.pop(w.uid, None)
            self.finished.add(w.uid)
        shutil.rmtree(w.dir, ignore_errors=True)

    def find_pod(self, ns, name):
        with self.lock:
            for w in self.workers.values():
                if w.ns == ns and w.name == name:
                    return w
        return None

    # -- lifecycle
    def start(self):
        os.makedirs(os.path.join(self.state, "pods"), exist_ok=True)
        for d in os.listdir(os.path.join(self.state, "pods")):
            shutil.rmtree(os.path.join(self.state, "pods", d), ignore_errors=True)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.a.serving_cert, self.a.serving_key)
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(self.a.client_ca)
        if self.network:
            self.network.setup()
            for n in self.nodes:
                n.address = self.network.address(n.index)
                n.netns = self.network.path(n.index)
                sock = socket_in_netns(n.netns, n.address, KUBELET_PORT)
                self.servers.append(KubeletServer(sock, ctx, self))
                fwd = socket_in_netns(n.netns, "127.0.0.1", self.api_server_port)
                Forwarder(fwd, self.api_server_port, self.stop)
            log("network: %d namespaces %s1.. on bridge %s" % (len(self.nodes), self.a.netns_prefix,
                                                               self.network.bridge))
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            self.shared_port = sock.getsockname()[1]
            self.servers.append(KubeletServer(sock, ctx, self))
        for s in self.servers:
            threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True,
                             name="kubelet-api").start()
        for n in self.nodes:
            threading.Thread(target=n.run_status, daemon=True, name="node " + n.name).start()
            threading.Thread(target=n.run_pods, daemon=True, name="pods " + n.name).start()
        log("%d nodes, kubelet API port %d, %s" % (len(self.nodes), self.api_port(None),
                                                  "root" if self.root else "not root: no namespaces"))

    def write_ready(self):
        info = {"nodes": {n.name: n.address for n in self.nodes}, "kubeletPort": self.api_port(None),
                "pid": os.getpid(), "root": self.root, "namespaces": bool(self.network)}
        tmp = self.a.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f)
        os.replace(tmp, self.a.ready_file)
        log("all %d nodes Ready" % len(self.nodes))

    def wait(self):
        ready_written = False
        while not self.stop.is_set():
            self.ready_changed.wait(1)
            self.ready_changed.clear()
            if not ready_written and self.a.ready_file and all(n.ready for n in self.nodes):
                self.write_ready()
                ready_written = True

    def shutdown(self):
        self.stop.set()
        with self.lock:
            procs = list(self.procs.values())
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.time() + 2
        while time.time() < deadline and any(p.poll() is None for p in procs):
            time.sleep(0.05)
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                p.wait(2)
            except subprocess.TimeoutExpired:
                pass
        for s in self.servers:
            try:
                s.socket.close()
            except OSError:
                pass
        if self.network:
            self.network.teardown()
        self.remove_created()
        for f in (self.a.ready_file, self.a.pid_file):
            if f:
                try:
                    os.unlink(f)
                except OSError:
                    pass
        log("stopped (%d container processes killed)" % len(procs))


def exec_container(spec_path):
    """Runs in the child, before the container's command: namespaces, mounts, then exec."""
    with open(spec_path) as f:
        spec = json.load(f)
    try:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:  # noqa: BLE001
        pass
    for n in spec.get("notes") or []:
        print(n, flush=True)
    try:
        if spec.get("netns"):
            fd = os.open(spec["netns"], os.O_RDONLY)
            setns(fd, CLONE_NEWNET)
            os.close(fd)
        if spec.get("mounts"):
            _check(libc().unshare(CLONE_NEWNS), "unshare")
            _check(libc().mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
            for m in spec["mounts"]:
                src, dst = m["src"], m["dst"]
                if os.path.isdir(src):
                    os.makedirs(dst, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    if not os.path.exists(dst):
                        open(dst, "a").close()
                _check(libc().mount(src.encode(), dst.encode(), None, MS_BIND | MS_REC, None),
                       "bind %s at %s" % (src, dst))
                if m["ro"]:
                    _check(libc().mount(b"none", dst.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None),
                           "read-only %s" % dst)
        wd = spec.get("workingDir") or "/"
        try:
            os.chdir(wd)
        except OSError:
            os.makedirs(wd, exist_ok=True)
            os.chdir(wd)
    except OSError as e:
        print("test kubelet: cannot set up the container: %s" % e, file=sys.stderr, flush=True)
        os._exit(128)
    argv = spec.get("argv")
    if argv is None:
        while True:
            signal.pause()
    try:
        os.execvpe(argv[0], argv, os.environ)
    except OSError as e:
        print('exec: "%s": %s' % (argv[0], e.strerror), file=sys.stderr, flush=True)
        os._exit(127)


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "--exec-container":
        exec_container(argv[1])
        return 0
    p = argparse.ArgumentParser(description="The tocsin test kubelet (see the module docstring).")
    p.add_argument("--server", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--admin-cert", required=True)
    p.add_argument("--admin-key", required=True)
    p.add_argument("--node-tokens", required=True)
    p.add_argument("--nodes", required=True)
    p.add_argument("--serving-cert", required=True)
    p.add_argument("--serving-key", required=True)
    p.add_argument("--client-ca", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--tocsin", default="")
    p.add_argument("--netns-prefix", default="")
    p.add_argument("--subnet", default="10.78.0",
                   help="the /24 of the node namespaces (first three octets); node i is SUBNET.i and "
                   "the bridge SUBNET.254 (default 10.78.0)")
    p.add_argument("--max-procs", type=int, default=64)
    p.add_argument("--ready-file", default="")
    p.add_argument("--pid-file", default="")
    a = p.parse_args(argv)
    if a.pid_file:
        with open(a.pid_file + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.replace(a.pid_file + ".tmp", a.pid_file)
    k = Kubelet(a)

    def on_signal(signum, _frame):
        k.stop.set()
        k.ready_changed.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        k.start()
        k.wait()
    except Exception as e:  # noqa: BLE001
        log("fatal: %s" % e)
        traceback.print_exc()
        k.shutdown()
        os._exit(1)
    k.shutdown()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
