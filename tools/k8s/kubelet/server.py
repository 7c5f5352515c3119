"""The kubelet's HTTPS API: /containerLogs/NS/POD/CONTAINER (so that `kubectl logs` works) and
/healthz, with client certificates."""

import http.server
import os
import select
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse

from .constants import log
from .logs import render_log
from .times import parse_time


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
