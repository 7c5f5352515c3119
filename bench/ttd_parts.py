"""The pieces of bench/time_to_detect.py's stack that know nothing of the rows: the webhook
receiver that notes when each notification arrives, a logged child process, and a fixture node
with its agent."""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import yaml

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "k8s"))
from cluster import Cluster  # noqa: E402


def write_atomic(path, text):
    """A sysfs/procfs file changes at once for its reader: never half-written."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Receiver:
    """Alertmanager's webhook receiver: notes each notification's alerts with their arrival time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.notes = []  # (monotonic, status, labels)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(min(n, 1 << 20)) or b"{}")
                now = time.monotonic()
                with outer.lock:
                    for al in body.get("alerts", []):
                        outer.notes.append((now, al.get("status"), al.get("labels", {})))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def firing(self, since=0.0):
        with self.lock:
            return [(t, ls) for t, st, ls in self.notes if st == "firing" and t >= since]

    def stop(self):
        self.server.shutdown()


class Proc:
    """A process whose stderr is kept (a file), stopped with SIGTERM then SIGKILL."""

    def __init__(self, name, argv, tmp):
        self.name = name
        self.log_path = os.path.join(tmp, name + ".log")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log_path, "w"))

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def listen_port(self):
        if self.proc.poll() is not None:
            raise SystemExit(f"{self.name} exited {self.proc.returncode}: {self.log()[-2000:]}")
        m = re.search(r"serving .* on 127\.0\.0\.1:(\d+)", self.log())
        return int(m.group(1)) if m else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Node:
    """A fixture node (a copy of ib-healthy) and its agent."""

    def __init__(self, name, tmp, fixture):
        self.name = name
        self.root = os.path.join(tmp, "nodes", name)
        shutil.copytree(fixture, self.root, symlinks=True)
        # The probed "shared" folder: tmpfs, whose fsync is instant, so that only the injected
        # slowness can be slow on a busy 2-vCPU machine.
        self.probe = tempfile.mkdtemp(prefix=f"tocsin-ttd-probe-{name}-", dir="/dev/shm")
        self.proc = None
        self.instance = None

    def port_file(self, device, port, name):
        return os.path.join(self.root, "sys", "class", "infiniband", device, "ports", str(port), name)

    def start(self, tocsin, tmp):
        with open(os.path.join(SOURCE, "deploy", "agent", "configmap.yaml")) as f:
            cfg = yaml.safe_load(yaml.safe_load(f)["data"]["agent.yaml"])
        # The shipped configuration with the commented expectations on, as a GPU pool sets them.
        cfg.update({"root": self.root, "listen": "127.0.0.1:0", "expect-mount": ["/mnt/lustre:lustre"],
                    "probe-path": [self.probe], "probe-max-fsync-ms": 50})
        path = os.path.join(tmp, self.name + ".yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        # Host processes beside the test kubelet: no PodResources socket per node (the DaemonSet
        # mounts the kubelet's), so attribution is off rather than "socket gone" on every node.
        self.proc = Proc("agent-" + self.name, [tocsin, "agent", "--config", path, "--no-kube",
                                                "--no-pod-resources", "--node-name", self.name],
                         tmp)

    def wait_listening(self):
        port = Cluster.wait_for(self.proc.listen_port, 30, f"agent {self.name} to listen")
        self.instance = f"127.0.0.1:{port}"
