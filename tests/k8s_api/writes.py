"""The test API server's writes: PATCH of nodes and nodes/status, POST of Events (server.py)."""
import json
import urllib.parse


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


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



class WritesMixin:
    """Mixed into server.py's Handler: self.state, self.send_json, self.authenticated."""

    def read_body(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        data = self.rfile.read(n) if n > 0 else b""
        try:
            return json.loads(data)
        except ValueError:
            return None

    def do_PATCH(self):
        """nodes/<name> and nodes/<name>/status with a strategic merge patch: conditions merge by
        type (their patchMergeKey), other lists are replaced, maps merge. The status subresource
        changes only status; the node itself only metadata and spec, guarded by resourceVersion."""
        path = urllib.parse.urlsplit(self.path).path.rstrip("/")
        ctype = self.headers.get("Content-Type", "")
        body = self.read_body()
        who = self.authenticated()
        self.state.log("PATCH %s auth=%s type=%s body=%s" %
                       (path, who, ctype, json.dumps(body, sort_keys=True, separators=(",", ":"))))
        if who is None:
            return self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
        if ctype not in ("application/strategic-merge-patch+json", "application/merge-patch+json"):
            return self.send_json(415, status_body(415, "UnsupportedMediaType",
                                                   "the body of the request was in an unknown "
                                                   "format"))
        if not isinstance(body, dict):
            return self.send_json(400, status_body(400, "BadRequest", "invalid JSON patch"))
        parts = path.split("/")
        if len(parts) not in (5, 6) or parts[1:4] != ["api", "v1", "nodes"] or \
                (len(parts) == 6 and parts[5] != "status"):
            return self.not_found(path)
        if "nodes" in (self.state.args.forbid or []):
            return self.send_json(403, status_body(403, "Forbidden", "patch forbidden"))
        with self.state.lock:
            hit = [o for o in self.state.objects["nodes"] if o["metadata"]["name"] == parts[4]]
            if not hit:
                return self.send_json(404, status_body(404, "NotFound",
                                                       'nodes "%s" not found' % parts[4]))
            node = hit[0]
            if len(parts) == 6:
                merge(node.setdefault("status", {}), body.get("status", {}))
            else:
                want = body.get("metadata", {}).get("resourceVersion")
                have = node["metadata"].get("resourceVersion", "")
                if want and want != have:
                    return self.send_json(409, status_body(
                        409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": the '
                        'object has been modified; please apply your changes to the latest '
                        'version and try again' % parts[4]))
                merge(node.setdefault("spec", {}), body.get("spec", {}))
            self.state.rv += 1
            node["metadata"]["resourceVersion"] = str(self.state.rv)
            out = json.loads(json.dumps(node))
        return self.send_json(200, out)

    def do_POST(self):
        """Creates an Event in /api/v1/namespaces/<ns>/events (generateName honoured)."""
        path = urllib.parse.urlsplit(self.path).path.rstrip("/")
        body = self.read_body()
        who = self.authenticated()
        self.state.log("POST %s auth=%s body=%s" %
                       (path, who, json.dumps(body, sort_keys=True, separators=(",", ":"))))
        if who is None:
            return self.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
        parts = path.split("/")
        if len(parts) != 6 or parts[1:4] != ["api", "v1", "namespaces"] or parts[5] != "events":
            return self.not_found(path)
        if not isinstance(body, dict) or body.get("kind") != "Event" or \
                not body.get("involvedObject") or not body.get("reason"):
            return self.send_json(422, status_body(422, "Invalid",
                                                   "Event is invalid: involvedObject and reason "
                                                   "are required"))
        meta = body.setdefault("metadata", {})
        if meta.get("namespace", parts[4]) != parts[4]:
            return self.send_json(400, status_body(400, "BadRequest",
                                                   "the namespace of the object does not match "
                                                   "the namespace of the request"))
        with self.state.lock:
            self.state.rv += 1
            meta["namespace"] = parts[4]
            meta.setdefault("name", meta.get("generateName", "event.") + "%05x" % self.state.rv)
            meta["resourceVersion"] = str(self.state.rv)
            self.state.objects["events"].append(body)
        return self.send_json(201, body)

