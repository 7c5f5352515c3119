"""The test API server's control endpoints (not part of the Kubernetes API; loopback only) and
its churn (server.py).

GET  /_control/requests        requests counted by verb and resource, and their total
POST /_control/reset-requests  zeroes those counts
GET  /_control/state           resourceVersion, open watches, objects per resource
POST /_control/apply           {object}: creates or replaces it (by kind, namespace and name)
POST /_control/delete          {"kind", "namespace", "name"}
POST /_control/compact         forgets the history: a watch from an older resourceVersion gets 410
POST /_control/drop-watches    closes every open watch abruptly (no terminating chunk)
POST /_control/churn           {"per_second": R, "seconds": S}: modifies random pods at R a second
POST /_control/fail            {"status": 503, "count": N}: the next N API requests fail so
"""
import datetime
import json
import random
import threading
import time
import uuid

from resources import KIND_TO_RESOURCE, RESOURCES, api_version
from store import Missing, key_of


def now_ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ControlMixin:
    """Mixed into server.py's Handler: self.state, self.send_json, self.read_body."""

    def control(self, method, path, query):
        if not self.client_address[0].startswith("127."):
            return self.send_json(403, {"error": "the control endpoints are loopback only"})
        body = self.read_body() if method == "POST" else None
        self.state.log("%s %s body=%s" % (method, path, json.dumps(body, sort_keys=True,
                                                                  separators=(",", ":"))))
        name = path[len("/_control/"):].rstrip("/")
        handler = getattr(self, "control_%s_%s" % (method.lower(), name.replace("-", "_")), None)
        if handler is None:
            return self.send_json(404, {"error": "no such control endpoint: %s %s" %
                                        (method, path)})
        try:
            return self.send_json(200, handler(body if body is not None else {}))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            return self.send_json(400, {"error": "bad request: %r" % (e,)})
        except Missing:
            return self.send_json(404, {"error": "no such object"})

    def control_get_requests(self, _):
        with self.state.lock:
            return json.loads(json.dumps(self.state.requests))

    def control_post_reset_requests(self, _):
        with self.state.lock:
            self.state.requests = {"total": 0, "byVerb": {}, "byResource": {}}
        return {}

    def control_get_state(self, _):
        store = self.state.store
        with store.cond:
            return {"resourceVersion": str(store.rv), "watches": len(store.watchers),
                    "objects": {r: len(o) for r, o in store.objects.items()}}

    def control_post_apply(self, obj):
        res = KIND_TO_RESOURCE[obj["kind"]]
        obj["apiVersion"] = api_version(res)
        meta = obj["metadata"]
        if not meta.get("name"):
            raise ValueError("metadata.name is required")
        if RESOURCES[res][2]:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        store = self.state.store
        with store.cond:
            cur = store.get(res, key_of(obj))
            for k, v in (("uid", str(uuid.uuid4())), ("creationTimestamp", now_ts())):
                meta.setdefault(k, cur["metadata"].get(k, v) if cur else v)
            out = store.put(res, obj)
            return {"type": "MODIFIED" if cur else "ADDED", "object": json.loads(json.dumps(out))}

    def control_post_delete(self, body):
        res = KIND_TO_RESOURCE[body["kind"]]
        store = self.state.store
        with store.cond:
            gone = store.delete(res, (body.get("namespace") or "" if RESOURCES[res][2] else "",
                                      body["name"]))
            return {"type": "DELETED", "object": json.loads(json.dumps(gone))}

    def control_post_compact(self, _):
        store = self.state.store
        with store.cond:
            store.compact()
            return {"resourceVersion": str(store.rv)}

    def control_post_drop_watches(self, _):
        store = self.state.store
        with store.cond:
            for w in store.watchers:
                w.dropped = True
            for cond in store.changed.values():
                cond.notify_all()
            return {"dropped": len(store.watchers)}

    def control_post_churn(self, body):
        per_second, seconds = float(body["per_second"]), float(body["seconds"])
        if not (0 < per_second <= 100000 and 0 < seconds <= 3600):
            raise ValueError("per_second in (0, 100000], seconds in (0, 3600]")
        start_churn(self.state.store, per_second, seconds, int(body.get("seed", 0)))
        return {"per_second": per_second, "seconds": seconds}

    def control_post_fail(self, body):
        status, count = int(body.get("status", 503)), int(body.get("count", 1))
        with self.state.lock:
            self.state.fail_next = [status, count]
        return {"status": status, "count": count}


def churned(pod, n):
    """pod after one more restart of its first container (and an annotation counting churn),
    sharing what did not change."""
    pod = dict(pod)
    meta = pod["metadata"] = dict(pod.get("metadata", {}))
    meta["annotations"] = dict(meta.get("annotations") or {}, **{"tocsin.test/churn": str(n)})
    st = pod["status"] = dict(pod.get("status", {}))
    cs = [dict(c) for c in st.get("containerStatuses", [])]
    if cs:
        cs[0]["restartCount"] = cs[0].get("restartCount", 0) + 1
        cs[0]["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error",
                                             "finishedAt": now_ts()}}
    st["containerStatuses"] = cs
    return pod


def start_churn(store, per_second, seconds, seed=0):
    """MODIFIES random pods at per_second for `seconds`, then stops."""
    rng = random.Random(seed)

    def run():
        start, done = time.monotonic(), 0
        while True:
            elapsed = time.monotonic() - start
            due = int(per_second * min(elapsed, seconds)) - done
            with store.cond:
                keys = store.keys["pods"]
                for _ in range(due if keys else 0):
                    key = rng.choice(keys)
                    store.put("pods", churned(store.objects["pods"][key], done))
                    done += 1
            if elapsed >= seconds:
                return
            time.sleep(min(0.01, max(0.001, 1.0 / per_second)))

    threading.Thread(target=run, daemon=True).start()
