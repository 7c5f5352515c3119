#!/usr/bin/env python3
"""A test Kubernetes API server: serves the objects of snapshot files (kubectl get -o json Lists).

Faithful enough for the real kubectl (discovery, server-side Tables) and for tocsin's client:
list with limit/continue pagination, watch, label/field selectors, bearer-token and client
certificate authentication over HTTPS, and faults on demand (5xx, 403, hangs, truncated bodies,
expired continue tokens). Prints "PORT <n>" once it listens, and exits by itself after
--max-seconds so that a killed test never leaves it behind.
"""
import argparse
import base64
import datetime
import http.server
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse

from writes import WritesMixin, status_body

# resource -> (group version path, kind, namespaced, short names)
RESOURCES = {
    "nodes": ("/api/v1", "Node", False, ["no"]),
    "pods": ("/api/v1", "Pod", True, ["po"]),
    "namespaces": ("/api/v1", "Namespace", False, ["ns"]),
    "daemonsets": ("/apis/apps/v1", "DaemonSet", True, ["ds"]),
    "configmaps": ("/api/v1", "ConfigMap", True, ["cm"]),
    "jobs": ("/apis/batch/v1", "Job", True, []),
    "events": ("/api/v1", "Event", True, ["ev"]),
}
# Writes the test server accepts (the agent's NodeConditions, taints and Events).
VERBS = {"nodes": ["patch"], "events": ["create"]}
KIND_TO_RESOURCE = {kind: res for res, (_, kind, _, _) in RESOURCES.items()}


def age(ts, now):
    if not ts:
        return "<unknown>"
    t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    s = int((now - t).total_seconds())
    if s >= 2 * 86400:
        return "%dd" % (s // 86400)
    if s >= 2 * 3600:
        return "%dh" % (s // 3600)
    if s >= 120:
        return "%dm" % (s // 60)
    return "%ds" % max(s, 0)


def column(name, type_="string", priority=0, fmt=""):
    return {"name": name, "type": type_, "format": fmt, "description": name, "priority": priority}


def table_row(obj, cells):
    meta = obj.get("metadata", {})
    partial = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
               "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "creationTimestamp",
                                                 "labels", "resourceVersion") if k in meta}}
    return {"cells": cells, "object": partial}


def node_cells(n, now):
    conds = {c["type"]: c["status"] for c in n.get("status", {}).get("conditions", [])}
    status = {"True": "Ready", "False": "NotReady"}.get(conds.get("Ready"), "Unknown")
    if n.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = n.get("metadata", {}).get("labels", {})
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = n.get("status", {}).get("nodeInfo", {})
    addrs = {a["type"]: a["address"] for a in n.get("status", {}).get("addresses", [])}
    return [n["metadata"]["name"], status, ",".join(roles) or "<none>",
            age(n["metadata"].get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            addrs.get("InternalIP", "<none>"), addrs.get("ExternalIP", "<none>"),
            info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"),
            info.get("containerRuntimeVersion", "<unknown>")]


NODE_COLUMNS = [column("Name", fmt="name"), column("Status"), column("Roles"), column("Age"),
                column("Version"), column("Internal-IP", priority=1),
                column("External-IP", priority=1), column("OS-Image", priority=1),
                column("Kernel-Version", priority=1), column("Container-Runtime", priority=1)]


def pod_cells(p, now):
    st = p.get("status", {})
    cs = st.get("containerStatuses", [])
    total = len(p.get("spec", {}).get("containers", [])) or len(cs)
    ready = sum(1 for c in cs if c.get("ready"))
    reason = st.get("phase", "Unknown")
    for c in cs:
        w = c.get("state", {}).get("waiting")
        if w and w.get("reason"):
            reason = w["reason"]
    restarts = sum(c.get("restartCount", 0) for c in cs)
    return [p["metadata"]["name"], "%d/%d" % (ready, total), reason, restarts,
            age(p["metadata"].get("creationTimestamp"), now), st.get("podIP", "<none>"),
            p.get("spec", {}).get("nodeName", "<none>"), "<none>", "<none>"]


POD_COLUMNS = [column("Name", fmt="name"), column("Ready"), column("Status"),
               column("Restarts", "string"), column("Age"), column("IP", priority=1),
               column("Node", priority=1), column("Nominated Node", priority=1),
               column("Readiness Gates", priority=1)]


def generic_cells(o, now):
    return [o["metadata"]["name"], age(o["metadata"].get("creationTimestamp"), now)]


GENERIC_COLUMNS = [column("Name", fmt="name"), column("Age")]


def matches(obj, label_selector, field_selector):
    labels = obj.get("metadata", {}).get("labels", {}) or {}
    for term in filter(None, (label_selector or "").split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.rstrip("=")) != v:
                return False
        elif labels.get(term) is None:
            return False
    fields = {"metadata.name": obj["metadata"].get("name"),
              "metadata.namespace": obj["metadata"].get("namespace"),
              "spec.nodeName": obj.get("spec", {}).get("nodeName", ""),
              "status.phase": obj.get("status", {}).get("phase", "")}
    for term in filter(None, (field_selector or "").split(",")):
        neg = "!=" in term
        k, v = term.split("!=" if neg else "=", 1)
        k = k.rstrip("=")
        if (fields.get(k) == v) == neg:
            return False
    return True


class State:
    def __init__(self, args):
        self.args = args
        self.objects = {res: [] for res in RESOURCES}
        self.lock = threading.Lock()
        self.fail_left = args.fail_first
        self.expire_left = 1 if args.expire_continue else 0
        self.rv = 1000
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
                    self.objects[res].append(obj)
        # Namespaces the objects live in (kubectl -A never needs them, describe may).
        seen = sorted({o["metadata"].get("namespace")
                       for r in ("pods", "daemonsets", "jobs", "configmaps")
                       for o in self.objects[r]} - {None})
        self.objects["namespaces"] = [{"kind": "Namespace", "apiVersion": "v1",
                                       "metadata": {"name": n}, "status": {"phase": "Active"}}
                                      for n in seen]

    def log(self, line):
        if self.args.log:
            with self.lock, open(self.args.log, "a") as f:
                f.write(line + "\n")


class Handler(WritesMixin, http.server.BaseHTTPRequestHandler):
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
        if code == 503:
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

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
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
            groups = [{"name": g, "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
                       "preferredVersion": {"groupVersion": g + "/v1", "version": "v1"}}
                      for g in ("apps", "batch")]
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                        "groups": groups})
        for gv in ("/api/v1", "/apis/apps/v1", "/apis/batch/v1"):
            if path == gv:
                return self.send_json(200, self.resource_list(gv))
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
        # /<gv>/[namespaces/<ns>/]<resource>[/<name>]
        for gv in ("/api/v1", "/apis/apps/v1", "/apis/batch/v1"):
            if path.startswith(gv + "/"):
                parts = path[len(gv) + 1:].split("/")
                break
        else:
            return self.not_found(path)
        ns = None
        if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] in RESOURCES:
            ns, parts = parts[1], parts[2:]
        res = parts[0]
        if res not in RESOURCES or RESOURCES[res][0] != gv or len(parts) > 2:
            return self.not_found(path)
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
        objs = [o for o in self.state.objects[res]
                if (ns is None or o["metadata"].get("namespace") == ns)
                and matches(o, query.get("labelSelector"), query.get("fieldSelector"))]
        kind = RESOURCES[res][1]
        if len(parts) == 2:
            hit = [o for o in objs if o["metadata"]["name"] == parts[1]]
            if not hit:
                return self.send_json(404, status_body(404, "NotFound", '%s "%s" not found' %
                                                       (res, parts[1])))
            return self.send_json(200, hit[0])
        if query.get("watch") in ("1", "true"):
            return self.watch(res, objs, query)
        return self.list(res, kind, objs, query, truncate=res in (args.truncate or []))

    def list(self, res, kind, objs, query, truncate):
        limit = int(query.get("limit", "0") or 0)
        start = 0
        if query.get("continue"):
            with self.state.lock:
                expired = self.state.expire_left > 0
                if expired:
                    self.state.expire_left -= 1
            if expired:
                return self.send_json(410, status_body(
                    410, "Expired", "The provided continue parameter is too old to display a "
                    "consistent list result. You can start a new list without the continue "
                    "parameter."))
            try:
                token = json.loads(base64.b64decode(query["continue"]))
                start = int(token["start"])
            except Exception:
                return self.send_json(400, status_body(400, "BadRequest",
                                                       "continue key is not valid"))
        page = objs[start:start + limit] if limit > 0 else objs[start:]
        meta = {"resourceVersion": str(self.state.rv)}
        end = start + len(page)
        if limit > 0 and end < len(objs):
            meta["continue"] = base64.b64encode(
                json.dumps({"rv": self.state.rv, "start": end}).encode()).decode()
            meta["remainingItemCount"] = len(objs) - end
        accept = self.headers.get("Accept", "")
        if "as=Table" in accept:
            now = datetime.datetime.now(datetime.timezone.utc)
            cols, cells = {"nodes": (NODE_COLUMNS, node_cells),
                           "pods": (POD_COLUMNS, pod_cells)}.get(res, (GENERIC_COLUMNS,
                                                                      generic_cells))
            body = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                    "columnDefinitions": cols, "rows": [table_row(o, cells(o, now)) for o in page]}
            return self.send_json(200, body)
        body = {"kind": kind + "List", "apiVersion": "v1" if RESOURCES[res][0] == "/api/v1"
                else RESOURCES[res][0][len("/apis/"):], "metadata": meta,
                "items": [dict(o, kind=kind) for o in page]}
        self.send_json(200, body, truncate=truncate)

    def watch(self, res, objs, query):
        """ADDED for every object when watching from the start (no resourceVersion, or "0");
        from a list's resourceVersion nothing has changed, so only the timeout ends it. Objects
        are Tables of one row when the client asks for as=Table, as the real server does."""
        timeout = min(float(query.get("timeoutSeconds", "1")), 5.0)
        if query.get("resourceVersion") not in (None, "", "0"):
            objs = []
        table = "as=Table" in self.headers.get("Accept", "")
        now = datetime.datetime.now(datetime.timezone.utc)
        cols, cells = {"nodes": (NODE_COLUMNS, node_cells),
                       "pods": (POD_COLUMNS, pod_cells)}.get(res, (GENERIC_COLUMNS, generic_cells))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        for o in objs:
            if table:
                o = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                     "metadata": {"resourceVersion": str(self.state.rv)},
                     "columnDefinitions": cols, "rows": [table_row(o, cells(o, now))]}
            chunk(json.dumps({"type": "ADDED", "object": o}).encode() + b"\n")
        time.sleep(timeout)  # a watch stays open until its timeout, then the client re-lists
        chunk(b"")

    def not_found(self, path):
        return self.send_json(404, status_body(404, "NotFound",
                                               "the server could not find the requested resource"))


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
    p.add_argument("--log", help="append one line per request to this file")
    p.add_argument("--max-seconds", type=float, default=300)
    args = p.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(args)
    if args.tls_dir:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(args.tls_dir, "server.crt"),
                            os.path.join(args.tls_dir, "server.key"))
        ctx.load_verify_locations(os.path.join(args.tls_dir, "ca.crt"))
        ctx.verify_mode = ssl.CERT_OPTIONAL  # a bearer token is the other way in
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Timer(args.max_seconds, lambda: os._exit(0)).start()
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
