"""The test API server's writes (server.py): PATCH of nodes and nodes/status, POST of Events and
Leases, PUT and DELETE of Leases, with the real server's answers: 409 Conflict for a stale
metadata.resourceVersion, 409 AlreadyExists, 404 NotFound, 422 Invalid, each a Status body."""
import datetime
import json
import urllib.parse
import uuid

from resources import RESOURCES, VERBS, api_version, parse_path, status_body
from store import Conflict, Exists, Missing


def merge(target, patch):
    """Strategic merge of `patch` into `target` for the fields the tests use: maps merge, a
    null deletes, `conditions` merge by type, other lists are replaced."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif key == "conditions" and isinstance(value, list):
            current = target.setdefault("conditions", [])
            for cond in value:
                for i, old in enumerate(current):
                    if old.get("type") == cond.get("type"):
                        current[i] = dict(old, **cond)
                        break
                else:
                    current.append(cond)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = value


def qualified(res):
    """leases.coordination.k8s.io, pods: how the real server names a resource in messages."""
    gv = RESOURCES[res][0]
    return res if gv.startswith("/api/") else res + "." + gv.split("/")[2]


def details(res, name):
    gv = RESOURCES[res][0]
    d = {"name": name, "kind": res}
    if gv.startswith("/apis/"):
        d["group"] = gv.split("/")[2]
    return d


class WritesMixin:
    """Mixed into server.py's Handler: self.state, self.send_json, self.authenticated."""

    def read_body(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        data = self.rfile.read(n) if n > 0 else b""
        try:
            return json.loads(data)
        except ValueError:
            return None

    def begin_write(self, method, with_body=True):
        """Reads, counts and logs a write: (path, parsed path or None, body), or None when it
        was answered already (401, an injected failure)."""
        path = urllib.parse.urlsplit(self.path).path.rstrip("/")
        body = self.read_body() if with_body else None
        self.count_request(method, path, {})
        who = self.authenticated()
        line = "%s %s auth=%s" % (method, path, who)
        if method == "PATCH":
            line += " type=%s" % self.headers.get("Content-Type", "")
        if with_body:
            line += " body=%s" % json.dumps(body, sort_keys=True, separators=(",", ":"))
        self.state.log(line)
        if who is None:
            self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
            return None
        if self.injected_failure():
            return None
        return path, parse_path(path), body

    def conflict(self, res, name):
        return self.send_json(409, status_body(
            409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been '
            'modified; please apply your changes to the latest version and try again' %
            (qualified(res), name), details(res, name)))

    def missing(self, res, name):
        return self.send_json(404, status_body(404, "NotFound", '%s "%s" not found' %
                                               (qualified(res), name), details(res, name)))

    def do_PATCH(self):
        """nodes/<name> and nodes/<name>/status with a strategic merge patch: conditions merge by
        type (their patchMergeKey), other lists are replaced, maps merge. As the real server's
        node strategies (pkg/registry/core/node/strategy.go): the status subresource keeps the
        old spec (nodeStatusStrategy.PrepareForUpdate), the node itself the old status; both
        take labels and annotations. The node itself is guarded by resourceVersion.
        --status-drops-metadata makes the status subresource drop metadata (a server that
        would), for the agent's fabric facts."""
        begun = self.begin_write("PATCH")
        if begun is None:
            return
        path, parsed, body = begun
        if self.headers.get("Content-Type", "") not in ("application/strategic-merge-patch+json",
                                                        "application/merge-patch+json"):
            return self.send_json(415, status_body(415, "UnsupportedMediaType",
                                                   "the body of the request was in an unknown "
                                                   "format"))
        if not isinstance(body, dict):
            return self.send_json(400, status_body(400, "BadRequest", "invalid JSON patch"))
        if parsed is None or parsed[2] != "nodes" or parsed[3] is None or \
                parsed[4] not in (None, "status"):
            return self.not_found(path)
        name, status = parsed[3], parsed[4] == "status"
        if "nodes" in (self.state.args.forbid or []):
            return self.send_json(403, status_body(403, "Forbidden", "patch forbidden"))

        def change(node):
            if status:
                merge(node.setdefault("status", {}), body.get("status", {}))
            else:
                merge(node.setdefault("spec", {}), body.get("spec", {}))
            if not (status and self.state.args.status_drops_metadata):
                meta = body.get("metadata") or {}
                for key in ("labels", "annotations"):
                    if isinstance(meta.get(key), dict):
                        merge(node["metadata"].setdefault(key, {}), meta[key])
            return node

        want = None if status else body.get("metadata", {}).get("resourceVersion")
        store = self.state.store
        try:
            with store.cond:
                node = store.update("nodes", ("", name), change, want)
                out = json.dumps(node)
        except Missing:
            return self.send_json(404, status_body(404, "NotFound",
                                                   'nodes "%s" not found' % name))
        except Conflict:
            return self.conflict("nodes", name)
        return self.send_json(200, json.loads(out))

    def writable(self, path, parsed, verb, named):
        """The resource and namespace of a write the server accepts, or None when answered."""
        if parsed is None or parsed[1] is None or parsed[4] is not None or \
                (parsed[3] is not None) != named or verb not in VERBS.get(parsed[2], []):
            if parsed is not None and parsed[2] in RESOURCES and parsed[4] is None:
                self.send_json(405, status_body(405, "MethodNotAllowed",
                                                "the server does not allow this method on the "
                                                "requested resource"))
            else:
                self.not_found(path)
            return None
        return parsed[2], parsed[1], parsed[3]

    def check_object(self, res, ns, body):
        """422 for an object the real server would refuse; the namespace must be the URL's."""
        kind = RESOURCES[res][1]
        if not isinstance(body, dict):
            self.send_json(400, status_body(400, "BadRequest", "the body is not a JSON object"))
            return False
        if body.setdefault("kind", kind) != kind or \
                body.setdefault("apiVersion", api_version(res)) != api_version(res):
            # The real server fills a missing kind and apiVersion in from the URL.
            self.send_json(400, status_body(400, "BadRequest", "%s in version \"%s\" cannot be "
                                            "handled as a %s" % (body["kind"],
                                                                 body.get("apiVersion", ""), kind)))
            return False
        if res == "events" and (not body.get("involvedObject") or not body.get("reason")):
            self.send_json(422, status_body(422, "Invalid", "Event is invalid: involvedObject "
                                            "and reason are required"))
            return False
        meta = body.setdefault("metadata", {})
        if meta.get("namespace", ns) != ns:
            self.send_json(400, status_body(400, "BadRequest", "the namespace of the object does "
                                            "not match the namespace of the request"))
            return False
        meta["namespace"] = ns
        return True

    def do_POST(self):
        """Creates an Event or a Lease in /<gv>/namespaces/<ns>/<resource> (generateName
        honoured); an existing name is 409 AlreadyExists."""
        if urllib.parse.urlsplit(self.path).path.startswith("/_control/"):
            return self.control("POST", urllib.parse.urlsplit(self.path).path, {})
        begun = self.begin_write("POST")
        if begun is None:
            return
        path, parsed, body = begun
        target = self.writable(path, parsed, "create", named=False)
        if target is None or not self.check_object(target[0], target[1], body):
            return
        res, ns, _ = target
        meta, store = body["metadata"], self.state.store
        with store.cond:
            if res == "events" and not meta.get("name"):
                meta.setdefault("generateName", "event.")  # as this server always did
            if not meta.get("name"):
                if not meta.get("generateName"):
                    return self.send_json(422, status_body(422, "Invalid", "%s is invalid: "
                                                           "metadata.name: Required value" %
                                                           RESOURCES[res][1]))
                meta["name"] = meta["generateName"] + "%05x" % (store.rv + 1)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ")
            meta.pop("resourceVersion", None)
            try:
                out = json.dumps(store.create(res, body))
            except Exists:
                return self.send_json(409, status_body(
                    409, "AlreadyExists", '%s "%s" already exists' % (qualified(res),
                                                                      meta["name"]),
                    details(res, meta["name"])))
        return self.send_json(201, json.loads(out))

    def do_PUT(self):
        """Replaces a Lease: a stale metadata.resourceVersion is 409 Conflict, a missing Lease
        404 (no create on update), and an empty resourceVersion an unconditional update."""
        begun = self.begin_write("PUT")
        if begun is None:
            return
        path, parsed, body = begun
        target = self.writable(path, parsed, "update", named=True)
        if target is None or not self.check_object(target[0], target[1], body):
            return
        res, ns, name = target
        meta = body["metadata"]
        if meta.get("name", name) != name:
            return self.send_json(400, status_body(400, "BadRequest", "the name of the object "
                                                   "(%s) does not match the name on the URL (%s)"
                                                   % (meta.get("name"), name)))
        store = self.state.store

        def change(cur):
            keep = {k: cur["metadata"][k] for k in ("uid", "creationTimestamp")
                    if k in cur["metadata"]}
            body["metadata"] = dict(meta, name=name, **keep)
            return body

        try:
            with store.cond:
                out = json.dumps(store.update(res, (ns, name), change,
                                              meta.get("resourceVersion")))
        except Missing:
            return self.missing(res, name)
        except Conflict:
            return self.conflict(res, name)
        return self.send_json(200, json.loads(out))

    def do_DELETE(self):
        """Deletes a Lease: 200 with the object, or 404."""
        begun = self.begin_write("DELETE", with_body=False)
        if begun is None:
            return
        path, parsed, _ = begun
        target = self.writable(path, parsed, "delete", named=True)
        if target is None:
            return
        res, ns, name = target
        store = self.state.store
        try:
            with store.cond:
                out = json.dumps(store.delete(res, (ns, name)))
        except Missing:
            return self.missing(res, name)
        return self.send_json(200, json.loads(out))
