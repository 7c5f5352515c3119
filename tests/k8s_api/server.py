#!/usr/bin/env python3
"""A test Kubernetes API server: serves the objects of snapshot files (kubectl get -o json Lists).

Faithful enough for the real kubectl (discovery, server-side Tables) and for tocsin's client:
list with limit/continue pagination, watch with resourceVersions, bookmarks and 410 Expired,
label/field selectors, bearer-token and client certificate authentication over HTTPS, writes
(node patches, Events, Leases with optimistic concurrency), and faults on demand (5xx, 403,
hangs, truncated bodies, expired continue tokens, dropped and expired watches, churn), also
through the /_control/ endpoints (control.py). Prints "PORT <n>" once it listens, and exits by
itself after --max-seconds so that a killed test never leaves it behind.
"""
import argparse
import base64
import datetime
import http.server
import json
import os
import ssl
import threading
import time
import urllib.parse

from control import ControlMixin, start_churn
from resources import (GROUP_VERSIONS, KIND_TO_RESOURCE, RESOURCES, VERBS, api_version, matches,
                       parse_path, status_body)
from store import Store
from tables import cells_for, table_row
from watch import WatchMixin
from writes import WritesMixin


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()  # the log file, counters and faults; the store has its own
        self.fail_left = args.fail_first
        self.fail_next = [0, 0]  # [status, count]: /_control/fail
        self.expire_left = 1 if args.expire_continue else 0
        self.gone_left = args.watch_gone_first
        self.requests = {"total": 0, "byVerb": {}, "byResource": {}}
        self.store = Store(RESOURCES, args.history)
        for path in args.snapshot:
            with open(path) as f:
                doc = json.load(f)
            list_kind = doc.get("kind", "")
            items = doc["items"] if list_kind.endswith("List") else [doc]
            for obj in items:
                # Items of a typed list (NodeList, ...) may omit their own kind.
                kind = obj.get("kind") or (list_kind[:-4] if list_kind != "List" else "")
                res = KIND_TO_RESOURCE.get(kind)
                if res:
                    obj["kind"] = kind
                    obj.setdefault("apiVersion", api_version(res))
                    self.store.load(res, obj)
        # Namespaces the objects live in (kubectl -A never needs them, describe may).
        seen = sorted({ns for r in ("pods", "daemonsets", "jobs", "configmaps")
                       for ns, _ in self.store.objects[r]} - {""})
        for n in seen:
            self.store.load("namespaces", {"kind": "Namespace", "apiVersion": "v1",
                                           "metadata": {"name": n}, "status": {"phase": "Active"}})

    def log(self, line):
        if self.args.log:
            with self.lock, open(self.args.log, "a") as f:
                f.write(line + "\n")

    def count(self, verb, res):
        with self.lock:
            r = self.requests
            r["total"] += 1
            r["byVerb"][verb] = r["byVerb"].get(verb, 0) + 1
            per = r["byResource"].setdefault(res, {})
            per[verb] = per.get(verb, 0) + 1


class Handler(ControlMixin, WatchMixin, WritesMixin, http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tocsin-test-apiserver/1"

    def log_message(self, fmt, *args):  # quiet; --log records requests
        pass

    @property
    def state(self):
        return self.server.state

    def send_json(self, code, body, truncate=False):
        data = json.dumps(body).encode()
        if truncate:
            data = data[: len(data) // 2]
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if code in (429, 503):
            self.send_header("Retry-After", "1")
        self.end_headers()
        self.wfile.write(data)

    def authenticated(self):
        args = self.state.args
        if not args.token and not args.token_file and not args.require_client_cert:
            return "anonymous"
        cert = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        if cert:
            return "x509"
        if args.token and self.headers.get("Authorization", "") == "Bearer " + args.token:
            return "token"
        if args.token_file:  # what the file holds now: a rotated token replaces the old one
            try:
                with open(args.token_file) as f:
                    current = f.read().strip()
            except OSError:
                current = ""
            if current and self.headers.get("Authorization", "") == "Bearer " + current:
                return "token"
        return None

    def count_request(self, method, path, query):
        """Counts an API request by verb and resource (/_control/requests)."""
        parsed = parse_path(path.rstrip("/"))
        if parsed is None:
            return self.state.count("get", "nonResource")
        _, _, res, name, _ = parsed
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)
        if verb is None:
            verb = "get" if name else ("watch" if query.get("watch") in ("1", "true") else "list")
        self.state.count(verb, res)

    def injected_failure(self):
        """Answers the request with the failure /_control/fail asked for, if any is left."""
        with self.state.lock:
            code, left = self.state.fail_next
            if left > 0:
                self.state.fail_next[1] -= 1
        if left <= 0:
            return False
        reason = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
                  504: "Timeout"}.get(code, "InternalError")
        self.send_json(code, status_body(code, reason, "injected failure (/_control/fail)"))
        return True

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path.startswith("/_control/"):
            return self.control("GET", url.path, query)
        self.count_request("GET", url.path, query)
        who = self.authenticated()
        self.state.log("GET %s auth=%s accept=%s host=%s" % (self.path, who, self.headers.get("Accept", ""),
                                                             self.headers.get("Host", "")))
        if who is None:
            return self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
        path = url.path.rstrip("/") or "/"
        if path == "/version":
            return self.send_json(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.4",
                                        "platform": "linux/amd64"})
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            groups = [{"name": gv.split("/")[2],
                       "versions": [{"groupVersion": gv[6:], "version": "v1"}],
                       "preferredVersion": {"groupVersion": gv[6:], "version": "v1"}}
                      for gv in GROUP_VERSIONS if gv.startswith("/apis/")]
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                        "groups": groups})
        if path in GROUP_VERSIONS:
            return self.send_json(200, self.resource_list(path))
        return self.serve_resource(path, query)

    def resource_list(self, gv):
        res = []
        for name, (g, kind, namespaced, short) in RESOURCES.items():
            if g == gv:
                res.append({"name": name, "singularName": kind.lower(), "namespaced": namespaced,
                            "kind": kind, "verbs": ["get", "list", "watch"] + VERBS.get(name, []),
                            "shortNames": short})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": gv.split("/", 2)[-1] if gv.startswith("/apis/") else "v1",
                "resources": res}

    def serve_resource(self, path, query):
        parsed = parse_path(path)
        if parsed is None or parsed[4] is not None:
            return self.not_found(path)
        gv, ns, res, name, _ = parsed
        args = self.state.args
        if res in (args.forbid or []):
            return self.send_json(403, status_body(
                403, "Forbidden", '%s is forbidden: User "system:serviceaccount:tocsin:test" cannot '
                'list resource "%s" in API group "%s" at the cluster scope' %
                (res, res, "" if gv == "/api/v1" else gv.split("/")[2])))
        if res in (args.hang or []):
            time.sleep(args.hang_seconds)
            return self.send_json(504, status_body(504, "Timeout", "hung on purpose"))
        with self.state.lock:
            fail = self.state.fail_left > 0
            if fail:
                self.state.fail_left -= 1
        if fail:
            return self.send_json(503, status_body(503, "ServiceUnavailable",
                                                   "the server is currently unable to handle "
                                                   "the request"))
        if self.injected_failure():
            return
        lsel, fsel = query.get("labelSelector"), query.get("fieldSelector")
        if name is not None:
            with self.state.store.cond:
                obj = self.state.store.get(res, (ns or "", name))
            if obj is None or not matches(obj, lsel, fsel):
                return self.send_json(404, status_body(404, "NotFound", '%s "%s" not found' %
                                                       (res, name)))
            return self.send_json(200, obj)
        if lsel or fsel or ns is not None:
            def keep(o):
                return (ns is None or o["metadata"].get("namespace") == ns) and \
                    matches(o, lsel, fsel)
        else:
            keep = None
        if query.get("watch") in ("1", "true"):
            return self.watch(res, keep, query)
        return self.list(res, keep, query, truncate=res in (args.truncate or []))

    def list(self, res, keep, query, truncate):
        """A page of at most `limit` objects; the continue token holds the list's
        resourceVersion (every page reports that one) and where the page ended."""
        limit = int(query.get("limit", "0") or 0)
        after, list_rv = 0, None
        if query.get("continue"):
            try:
                token = json.loads(base64.b64decode(query["continue"]))
                after, list_rv = int(token["start"]), int(token["rv"])
            except Exception:
                return self.send_json(400, status_body(400, "BadRequest",
                                                       "continue key is not valid"))
            with self.state.lock:  # --expire-continue, or a compaction since the first page
                expired = self.state.expire_left > 0
                if expired:
                    self.state.expire_left -= 1
            if expired or list_rv < self.state.store.compacted:
                return self.send_json(410, status_body(
                    410, "Expired", "The provided continue parameter is too old to display a "
                    "consistent list result. You can start a new list without the continue "
                    "parameter."))
        store = self.state.store
        with store.cond:
            page, last, remaining = store.page(res, keep, after, limit)
            if list_rv is None:
                list_rv = store.rv
        meta = {"resourceVersion": str(list_rv)}
        if last is not None:
            meta["continue"] = base64.b64encode(
                json.dumps({"rv": list_rv, "start": last}).encode()).decode()
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        if "as=Table" in self.headers.get("Accept", ""):
            now = datetime.datetime.now(datetime.timezone.utc)
            cols, cells = cells_for(res)
            body = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                    "columnDefinitions": cols, "rows": [table_row(o, cells(o, now)) for o in page]}
            return self.send_json(200, body)
        body = {"kind": RESOURCES[res][1] + "List", "apiVersion": api_version(res),
                "metadata": meta, "items": page}
        self.send_json(200, body, truncate=truncate)

    def not_found(self, path):
        return self.send_json(404, status_body(404, "NotFound",
                                               "the server could not find the requested resource"))


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many informers connect at once


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--snapshot", action="append", required=True)
    p.add_argument("--tls-dir", help="folder with ca.crt, server.crt, server.key (HTTPS)")
    p.add_argument("--token", help="accept this bearer token")
    p.add_argument("--token-file", help="accept only the bearer token this file holds now")
    p.add_argument("--require-client-cert", action="store_true",
                   help="accept only verified client certificates (or --token)")
    p.add_argument("--fail-first", type=int, default=0, help="answer 503 to the first N lists")
    p.add_argument("--forbid", action="append", help="answer 403 for this resource")
    p.add_argument("--hang", action="append", help="hang on requests for this resource")
    p.add_argument("--hang-seconds", type=float, default=30)
    p.add_argument("--truncate", action="append", help="cut this resource's lists in half")
    p.add_argument("--expire-continue", action="store_true",
                   help="answer the first continued list with 410 Gone")
    p.add_argument("--history", type=int, default=10000,
                   help="changes kept per resource; a watch from before them gets 410 Expired")
    p.add_argument("--watch-max-seconds", type=float, default=600,
                   help="cap on a watch's timeoutSeconds (and its timeout when it sends none)")
    p.add_argument("--bookmark-seconds", type=float, default=1.0,
                   help="BOOKMARK period of watches with allowWatchBookmarks=true")
    p.add_argument("--watch-gone-first", type=int, default=0,
                   help="the first N watches from a resourceVersion get the 410 Expired event")
    p.add_argument("--watch-drop-after", type=float, default=0,
                   help="drop every watch abruptly after this many seconds (0: never)")
    p.add_argument("--churn", type=float, default=0,
                   help="modify this many random pods per second (restartCount, status)")
    p.add_argument("--churn-seconds", type=float, default=60, help="for this long")
    p.add_argument("--status-drops-metadata", action="store_true",
                   help="PATCH of nodes/<name>/status ignores metadata (labels, annotations)")
    p.add_argument("--log", help="append one line per request to this file")
    p.add_argument("--max-seconds", type=float, default=300)
    args = p.parse_args()

    server = Server(("127.0.0.1", 0), Handler)
    server.state = State(args)
    if args.tls_dir:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(args.tls_dir, "server.crt"),
                            os.path.join(args.tls_dir, "server.key"))
        ctx.load_verify_locations(os.path.join(args.tls_dir, "ca.crt"))
        ctx.verify_mode = ssl.CERT_OPTIONAL  # a bearer token is the other way in
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Timer(args.max_seconds, lambda: os._exit(0)).start()
    if args.churn > 0:
        start_churn(server.state.store, args.churn, args.churn_seconds)
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
