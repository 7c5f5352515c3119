"""The Kubelet: its nodes, pod workers, container processes and kubelet API servers, its
lifecycle (start, ready file, shutdown), and the command line."""

import argparse
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse

from .api import Api
from .child import exec_container
from .constants import ENTRY_POINT, KUBELET_PORT, log
from .env import env_for, expand_vars
from .logs import LogPump
from .netns import Forwarder, Network, socket_in_netns
from .nodes import Node
from .pods import PodWorker
from .server import KubeletServer
from .volumes import Volumes


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

    def pod_resources_root(self, node):
        d = os.path.join(self.state, "pod-resources", node)
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
                proc = subprocess.Popen([sys.executable, "-I", ENTRY_POINT, "--exec-container",
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
        return env_for(self, w, spec)

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
