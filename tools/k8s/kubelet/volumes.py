"""A pod's volumes, materialised under its state folder: secret, configMap, downwardAPI,
emptyDir, projected (with ServiceAccount tokens) and hostPath."""

import base64
import os

from .api import ApiError
from .constants import POD_LOG_ROOT, POD_RESOURCES_ROOT
from .env import field_ref, resource_field


class Volumes:
    def __init__(self, kubelet):
        self.k = kubelet

    def prepare(self, w):
        """Materialises the pod's volumes under its state folder (idempotent; raises to retry)."""
        base = os.path.join(w.dir, "volumes")
        os.makedirs(base, exist_ok=True)
        w.volume_dirs = {}
        for v in w.pod["spec"].get("volumes") or []:
            name = v["name"]
            d = os.path.join(base, name)
            if "hostPath" in v:
                hp = v["hostPath"]
                path, kind = hp["path"], hp.get("type", "")
                if os.path.normpath(path) == POD_LOG_ROOT:
                    # The node's /var/log/pods is this kubelet's, per node, in the kubelet's layout
                    # (NS_POD_UID/CONTAINER/N.log in the CRI format), not the host's.
                    w.volume_dirs[name] = self.k.pod_log_root(w.node.name)
                    continue
                if os.path.normpath(path) == POD_RESOURCES_ROOT:
                    w.volume_dirs[name] = self.k.pod_resources_root(w.node.name)
                    continue
                if kind == "DirectoryOrCreate" and self.k.root:
                    os.makedirs(path, exist_ok=True)
                elif kind == "FileOrCreate" and self.k.root and not os.path.exists(path):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    open(path, "a").close()
                w.volume_dirs[name] = path
                continue
            files = None
            if "emptyDir" in v:
                files = {}
            elif "secret" in v:
                files = self.secret_files(w, v["secret"], v["secret"].get("defaultMode", 0o644))
            elif "configMap" in v:
                files = self.configmap_files(w, v["configMap"], v["configMap"].get("defaultMode", 0o644))
            elif "downwardAPI" in v:
                files = self.downward_files(w, v["downwardAPI"], v["downwardAPI"].get("defaultMode", 0o644))
            elif "projected" in v:
                files = {}
                mode = v["projected"].get("defaultMode", 0o644)
                for src in v["projected"].get("sources") or []:
                    if "secret" in src:
                        files.update(self.secret_files(w, src["secret"], mode))
                    elif "configMap" in src:
                        files.update(self.configmap_files(w, src["configMap"], mode))
                    elif "downwardAPI" in src:
                        files.update(self.downward_files(w, src["downwardAPI"], mode))
                    elif "serviceAccountToken" in src:
                        files.update(self.token_file(w, src["serviceAccountToken"], mode))
            else:
                kind = [k for k in v if k != "name"]
                raise RuntimeError("volume %s: type %s is not supported by the test kubelet"
                                   % (name, ",".join(kind)))
            os.makedirs(d, exist_ok=True)
            for rel, (data, mode) in files.items():
                p = os.path.join(d, rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                tmp = p + ".tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.chmod(tmp, mode)
                os.replace(tmp, p)
            w.volume_dirs[name] = d

    @staticmethod
    def _items(data, items, mode):
        out = {}
        if items:
            for it in items:
                if it["key"] in data:
                    out[it["path"]] = (data[it["key"]], it.get("mode", mode))
                else:
                    raise RuntimeError("key %s not found" % it["key"])
        else:
            for k, val in data.items():
                out[k] = (val, mode)
        return out

    def _get(self, w, kind, name, optional):
        try:
            return w.node.api.get("/api/v1/namespaces/%s/%s/%s" % (w.ns, kind, name))
        except ApiError as e:
            if e.status == 404 and optional:
                return None
            raise

    def secret_files(self, w, src, mode):
        name = src.get("secretName") or src.get("name")
        obj = self._get(w, "secrets", name, src.get("optional"))
        if obj is None:
            return {}
        data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        return self._items(data, src.get("items"), mode)

    def configmap_files(self, w, src, mode):
        obj = self._get(w, "configmaps", src["name"], src.get("optional"))
        if obj is None:
            return {}
        data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        return self._items(data, src.get("items"), mode)

    def downward_files(self, w, src, mode):
        out = {}
        for it in src.get("items") or []:
            if "fieldRef" in it:
                val = field_ref(w.pod, it["fieldRef"]["fieldPath"], w.node.address, w.node.address)
            else:
                ref = it["resourceFieldRef"]
                c = next((c.spec for c in w.ctrs + w.inits if c.name == ref.get("containerName")),
                         w.ctrs[0].spec)
                val = resource_field(c, w.node.allocatable, ref)
            out[it["path"]] = (val.encode(), it.get("mode", mode))
        return out

    def token_file(self, w, src, mode):
        sa = w.pod["spec"].get("serviceAccountName") or "default"
        req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": src.get("expirationSeconds", 3600),
                        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": w.name,
                                           "uid": w.uid}}}
        if src.get("audience"):
            req["spec"]["audiences"] = [src["audience"]]
        obj = w.node.api.call("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (w.ns, sa), req)
        return {src["path"]: (obj["status"]["token"].encode(), mode)}
