"""What the test API server serves: its resources, selectors, paths and Status bodies."""

# resource -> (group version path, kind, namespaced, short names)
RESOURCES = {
    "nodes": ("/api/v1", "Node", False, ["no"]),
    "pods": ("/api/v1", "Pod", True, ["po"]),
    "namespaces": ("/api/v1", "Namespace", False, ["ns"]),
    "daemonsets": ("/apis/apps/v1", "DaemonSet", True, ["ds"]),
    "configmaps": ("/api/v1", "ConfigMap", True, ["cm"]),
    "jobs": ("/apis/batch/v1", "Job", True, []),
    "events": ("/api/v1", "Event", True, ["ev"]),
    "leases": ("/apis/coordination.k8s.io/v1", "Lease", True, []),
}
# Writes the test server accepts (the agent's NodeConditions, taints and Events; leader
# election's Leases).
VERBS = {"nodes": ["patch"], "events": ["create"], "leases": ["create", "update", "delete"]}
KIND_TO_RESOURCE = {kind: res for res, (_, kind, _, _) in RESOURCES.items()}


GROUP_VERSIONS = sorted({gv for gv, _, _, _ in RESOURCES.values()})


def api_version(res):
    gv = RESOURCES[res][0]
    return "v1" if gv == "/api/v1" else gv[len("/apis/"):]


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def parse_path(path):
    """/<gv>/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]] -> (gv, ns, resource, name,
    subresource), or None for a path outside the resources."""
    for gv in GROUP_VERSIONS:
        if path.startswith(gv + "/"):
            parts = path[len(gv) + 1:].split("/")
            break
    else:
        return None
    ns = None
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] in RESOURCES:
        ns, parts = parts[1], parts[2:]
    res = parts[0]
    if res not in RESOURCES or RESOURCES[res][0] != gv or len(parts) > 3:
        return None
    return gv, ns, res, (parts[1] if len(parts) > 1 else None), \
        (parts[2] if len(parts) > 2 else None)


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


