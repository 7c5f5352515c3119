"""The Kubernetes API client: JSON calls and watch streams over HTTPS."""

import http.client
import json
import ssl
import urllib.parse

from .constants import API_TIMEOUT


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
