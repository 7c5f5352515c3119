"""Server-side Tables for kubectl (Accept: as=Table): the columns of nodes, pods, others."""
import datetime


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


def cells_for(res):
    return {"nodes": (NODE_COLUMNS, node_cells),
            "pods": (POD_COLUMNS, pod_cells)}.get(res, (GENERIC_COLUMNS, generic_cells))
