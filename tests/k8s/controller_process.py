"""A `tocsin controller` process for the tests: its /metrics parsed, its log kept, SIGTERM timed."""
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, tocsin_binary  # noqa: E402


class ControllerProcess:
    """A `tocsin controller` process on 127.0.0.1:0; its stderr is collected by a thread."""

    def __init__(self, kubeconfig, *extra, identity="tocsin-controller"):
        self.identity = identity
        for i, a in enumerate(extra):
            if a == "--identity":
                self.identity = extra[i + 1]
        self.lines = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [tocsin_binary(), "controller", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0",
             "--settle", "200ms", *extra],
            stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.port = Cluster.wait_for(self._port, 30, f"{self.identity} to listen")

    def _read(self):
        for line in self.proc.stderr:
            with self.lock:
                self.lines.append(line)

    def log(self):
        with self.lock:
            return "".join(self.lines)

    def _port(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.identity} exited {self.proc.returncode}: {self.log()}")
        m = re.search(r"serving .* on 127\.0\.0\.1:(\d+)", self.log())
        return int(m.group(1)) if m else None

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        """{(name, frozenset(labels)): value}"""
        _, text = self.get("/metrics")
        out = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = re.match(r'([a-z_]+)(\{(.*)\})? (\S+)$', line)
            if not m:
                continue
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            out[(m.group(1), labels)] = float(m.group(4))
        return out

    def value(self, name, **labels):
        want = set(labels.items())
        for (n, ls), v in self.metrics().items():
            if n == name and want <= set(ls):
                return v
        return None

    def stop(self):
        """SIGTERM; returns the seconds it took to exit."""
        if self.proc.poll() is not None:
            return 0.0
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.identity} did not stop within 10 s of SIGTERM")
        return time.monotonic() - start
