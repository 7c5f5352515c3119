"""Network namespaces: setns (ctypes), a listening socket inside a namespace, the per-node
namespaces on a bridge, and the forwarder for the `kubernetes` Service."""

import ctypes
import os
import select
import socket
import subprocess
import threading

from .constants import CLONE_NEWNET

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
    return _libc


def check_rc(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def setns(fd, nstype):
    check_rc(libc().setns(fd, nstype), "setns")


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
