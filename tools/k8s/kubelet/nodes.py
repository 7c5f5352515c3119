"""One node: registration, nodes/status heartbeats, the node Lease, the not-ready taint, and the
watch of the pods bound to it."""

import hashlib
import json
import os
import time
import urllib.parse

from .api import Api, ApiError
from .constants import HEARTBEAT, LEASE_SECONDS, log
from .times import micro_time, rfc3339


class Node:
    def __init__(self, kubelet, index, obj, token):
        self.k = kubelet
        self.index = index
        self.obj = obj
        self.name = obj["metadata"]["name"]
        self.api = Api(kubelet.server, kubelet.ca, token=token)
        st = obj.get("status") or {}
        self.capacity = st.get("capacity") or {}
        self.allocatable = st.get("allocatable") or self.capacity
        self.address = "127.0.0.1"
        self.netns = None
        self.uid = None
        self.ready = False
        self.conditions = {}

    def node_info(self):
        info = dict((self.obj.get("status") or {}).get("nodeInfo") or {})
        defaults = {"machineID": hashlib.md5(self.name.encode()).hexdigest(),
                    "systemUUID": hashlib.md5(("uuid" + self.name).encode()).hexdigest(),
                    "bootID": self.k.boot_id, "kernelVersion": os.uname().release,
                    "osImage": "tocsin test kubelet", "containerRuntimeVersion": "tocsin-test://1.0",
                    "kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                    "operatingSystem": "linux", "architecture": "amd64"}
        for k, v in defaults.items():
            if not info.get(k):
                info[k] = v
        return info

    def register(self):
        admin = self.k.admin
        meta = self.obj["metadata"]
        try:
            node = admin.get("/api/v1/nodes/" + self.name)
        except ApiError as e:
            if e.status != 404:
                raise
            labels = dict(meta.get("labels") or {})
            for k, v in (("kubernetes.io/hostname", self.name), ("kubernetes.io/os", "linux"),
                         ("kubernetes.io/arch", "amd64"), ("beta.kubernetes.io/os", "linux"),
                         ("beta.kubernetes.io/arch", "amd64")):
                labels.setdefault(k, v)
            body = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": self.name, "labels": labels,
                                 "annotations": dict(meta.get("annotations") or {})},
                    "spec": {}}
            taints = (self.obj.get("spec") or {}).get("taints")
            if taints:
                body["spec"]["taints"] = [{k: v for k, v in t.items() if k != "timeAdded"} for t in taints]
            node = admin.call("POST", "/api/v1/nodes", body)
            log("node %s created" % self.name)
        self.uid = node["metadata"]["uid"]
        for c in (node.get("status") or {}).get("conditions") or []:
            self.conditions[c["type"]] = c

    def advertised(self):
        """Capacity and allocatable, with what the tests override in STATE/node-overrides.json
        ({"NODE": {"allocatable": {"rdma/x": "0"}}}: a device plugin that stopped advertising),
        read at every heartbeat."""
        capacity, allocatable = dict(self.capacity), dict(self.allocatable)
        try:
            with open(os.path.join(self.k.state, "node-overrides.json")) as f:
                mine = json.load(f).get(self.name) or {}
        except (OSError, ValueError, AttributeError):
            mine = {}
        for res, qty in (mine.get("allocatable") or {}).items():
            allocatable[str(res)] = str(qty)
            capacity.setdefault(str(res), str(qty))
        return capacity, allocatable

    def heartbeat(self):
        now = time.time()
        conds = []
        for ctype, status, reason, msg in (
                ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ("Ready", "True", "KubeletReady", "kubelet is posting ready status")):
            prev = self.conditions.get(ctype)
            ltt = prev["lastTransitionTime"] if prev and prev.get("status") == status else rfc3339(now)
            conds.append({"type": ctype, "status": status, "reason": reason, "message": msg,
                          "lastHeartbeatTime": rfc3339(now), "lastTransitionTime": ltt})
        capacity, allocatable = self.advertised()
        status = {"capacity": capacity, "allocatable": allocatable,
                  "nodeInfo": self.node_info(),
                  "addresses": [{"type": "InternalIP", "address": self.address},
                                {"type": "Hostname", "address": self.name}],
                  "daemonEndpoints": {"kubeletEndpoint": {"Port": self.k.api_port(self)}},
                  "conditions": conds}
        node = self.api.call("PATCH", "/api/v1/nodes/%s/status" % self.name, {"status": status},
                             ctype="application/strategic-merge-patch+json")
        for c in (node.get("status") or {}).get("conditions") or []:
            self.conditions[c["type"]] = c
        self.renew_lease(now)
        self.remove_not_ready_taint(node)
        self.ready = True

    def remove_not_ready_taint(self, node):
        """With the admin certificate, guarded by the resourceVersion (retried on a conflict)."""
        wanted = {t.get("key") for t in (self.obj.get("spec") or {}).get("taints") or []}
        for _ in range(5):
            taints = (node.get("spec") or {}).get("taints") or []
            keep = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"
                    or "node.kubernetes.io/not-ready" in wanted]
            if len(keep) == len(taints):
                return
            try:
                self.k.admin.call("PATCH", "/api/v1/nodes/" + self.name,
                                  {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                   "spec": {"taints": keep or None}},
                                  ctype="application/merge-patch+json")
                log("node %s: removed the not-ready taint" % self.name)
                return
            except ApiError as e:
                if e.status != 409:
                    raise
                node = self.k.admin.get("/api/v1/nodes/" + self.name)
        raise RuntimeError("node %s: the not-ready taint: conflicts" % self.name)

    def renew_lease(self, now):
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + self.name
        try:
            lease = self.api.get(path)
        except ApiError as e:
            if e.status != 404:
                raise
            lease = None
        spec = {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_SECONDS,
                "renewTime": micro_time(now)}
        if lease is None:
            self.api.call("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                          {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": {"name": self.name, "namespace": "kube-node-lease",
                                        "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                                             "name": self.name, "uid": self.uid}]},
                           "spec": spec})
        else:
            lease["spec"].update(spec)
            self.api.call("PUT", path, lease)

    def run_status(self):
        while not self.k.stop.is_set():
            try:
                if self.uid is None:
                    self.register()
                self.heartbeat()
                wait = HEARTBEAT
            except Exception as e:  # noqa: BLE001
                log("node %s: %s" % (self.name, e))
                if isinstance(e, ApiError) and e.status == 404:
                    self.uid = None  # the Node was deleted: register it again
                wait = 2
            self.k.ready_changed.set()
            self.k.stop.wait(wait)

    def run_pods(self):
        sel = urllib.parse.quote("spec.nodeName=" + self.name)
        rv = None
        while not self.k.stop.is_set():
            try:
                if rv is None:
                    lst = self.api.get("/api/v1/pods?fieldSelector=" + sel)
                    rv = lst["metadata"]["resourceVersion"]
                    self.k.sync_pods(self, lst.get("items") or [])
                path = ("/api/v1/pods?fieldSelector=%s&watch=1&allowWatchBookmarks=true"
                        "&timeoutSeconds=300&resourceVersion=%s" % (sel, rv))
                for ev in self.api.watch(path, self.k.stop, 330):
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            rv = None
                        else:
                            log("node %s: watch error %s" % (self.name, obj.get("message")))
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if typ in ("ADDED", "MODIFIED"):
                        self.k.pod_event(self, obj)
                    elif typ == "DELETED":
                        self.k.pod_deleted(obj)
            except ApiError as e:
                if e.status == 410:
                    rv = None
                log("node %s: pods: %s" % (self.name, e))
                self.k.stop.wait(1)
            except Exception as e:  # noqa: BLE001
                log("node %s: pods: %s" % (self.name, e))
                self.k.stop.wait(1)
