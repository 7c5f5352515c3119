"""A container's environment and command: $(VAR) expansion, the downward API (fieldRef,
resourceFieldRef), secret and configMap references, and the argv to run."""

import base64
import collections
import os

from .api import ApiError
from .constants import DEFAULT_PATH


def expand_vars(s, env):
    """Kubernetes $(VAR) expansion: $(VAR) is replaced when VAR is defined, $$ is an escaped $."""
    out = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "$" and i + 1 < n:
            nxt = s[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                j = s.find(")", i + 2)
                if j != -1:
                    name = s[i + 2:j]
                    if name in env:
                        out.append(env[name])
                    else:
                        out.append(s[i:j + 1])
                    i = j + 1
                    continue
        out.append(c)
        i += 1
    return "".join(out)


def field_ref(pod, path, pod_ip, host_ip):
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
    }
    if path in simple:
        return simple[path]
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path == prefix:
            items = meta.get(key) or {}
            return "\n".join('%s="%s"' % (k, items[k]) for k in sorted(items))
        if path.startswith(prefix + "[") and path.endswith("]"):
            k = path[len(prefix) + 1:-1].strip("'\"")
            return (meta.get(key) or {}).get(k, "")
    raise ValueError("unsupported fieldRef %s" % path)


def parse_quantity(q):
    """A resource quantity as a float of base units (cpu in cores, memory in bytes)."""
    q = str(q)
    suffixes = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
                "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
                "E": 1e18}
    for suf in sorted(suffixes, key=len, reverse=True):
        if q.endswith(suf):
            return float(q[:-len(suf)]) * suffixes[suf]
    return float(q)


def resource_field(container, node_allocatable, ref):
    """resourceFieldRef: limits/requests of a container, the node's allocatable for absent limits."""
    res = ref.get("resource", "")
    divisor = parse_quantity(ref.get("divisor") or "1")
    kind, _, name = res.partition(".")
    resources = container.get("resources", {})
    val = (resources.get(kind) or {}).get(name)
    if val is None and kind == "limits":
        val = node_allocatable.get(name)
    if val is None:
        val = "0"
    v = parse_quantity(val) / divisor
    return str(int(-(-v // 1)))  # ceiling, as the kubelet rounds up


def resolve_argv(container, image_is_tocsin, tocsin):
    """The process to run: (argv, note). note is a line for the container log or None."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    if image_is_tocsin:
        if not command:
            return [tocsin] + args, None
        if os.path.basename(command[0]) == "tocsin":
            return [tocsin] + command[1:] + args, None
        return command + args, None
    if not command:
        return None, ("test kubelet: image %s has no known entrypoint (no command); waiting until "
                      "killed" % container.get("image", ""))
    return command + args, None


def env_for(kubelet, w, spec):
    pod, node = w.pod, w.node
    ip = node.address
    env = collections.OrderedDict()
    env["PATH"] = DEFAULT_PATH
    env["HOSTNAME"] = pod["spec"].get("hostname") or w.name
    env["HOME"] = "/root" if kubelet.root else os.environ.get("HOME", "/")
    port = str(kubelet.api_server_port)
    for k, v in (("KUBERNETES_SERVICE_HOST", "127.0.0.1"), ("KUBERNETES_SERVICE_PORT", port),
                 ("KUBERNETES_SERVICE_PORT_HTTPS", port), ("KUBERNETES_PORT", "tcp://127.0.0.1:" + port),
                 ("KUBERNETES_PORT_%s_TCP" % port, "tcp://127.0.0.1:" + port),
                 ("KUBERNETES_PORT_%s_TCP_PROTO" % port, "tcp"),
                 ("KUBERNETES_PORT_%s_TCP_PORT" % port, port),
                 ("KUBERNETES_PORT_%s_TCP_ADDR" % port, "127.0.0.1")):
        env[k] = v
    cache = {}

    def fetch(kind, name, optional):
        key = (kind, name)
        if key not in cache:
            try:
                cache[key] = node.api.get("/api/v1/namespaces/%s/%s/%s" % (w.ns, kind, name))
            except ApiError as e:
                if e.status == 404 and optional:
                    cache[key] = None
                elif e.status == 404:
                    raise RuntimeError('%s "%s" not found' % (kind[:-1], name))
                else:
                    raise
        return cache[key]

    def values(kind, obj):
        if obj is None:
            return {}
        if kind == "secrets":
            return {k: base64.b64decode(v).decode(errors="replace") for k, v in (obj.get("data") or {}).items()}
        return dict(obj.get("data") or {})

    for ef in spec.get("envFrom") or []:
        prefix = ef.get("prefix", "")
        for kind, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
            if key in ef:
                ref = ef[key]
                for k, v in values(kind, fetch(kind, ref["name"], ref.get("optional"))).items():
                    env[prefix + k] = v
    for e in spec.get("env") or []:
        name = e["name"]
        if "valueFrom" not in e:
            env[name] = expand_vars(e.get("value", ""), env)
            continue
        vf = e["valueFrom"]
        if "fieldRef" in vf:
            env[name] = field_ref(pod, vf["fieldRef"]["fieldPath"], ip, ip)
        elif "resourceFieldRef" in vf:
            env[name] = resource_field(spec, node.allocatable, vf["resourceFieldRef"])
        else:
            for kind, key in (("secrets", "secretKeyRef"), ("configmaps", "configMapKeyRef")):
                if key in vf:
                    ref = vf[key]
                    vals = values(kind, fetch(kind, ref["name"], ref.get("optional")))
                    if ref["key"] in vals:
                        env[name] = vals[ref["key"]]
                    elif not ref.get("optional"):
                        raise RuntimeError("couldn't find key %s in %s %s/%s"
                                           % (ref["key"], kind[:-1].capitalize()
                                              if kind == "secrets" else "ConfigMap", w.ns, ref["name"]))
    return dict(env)
