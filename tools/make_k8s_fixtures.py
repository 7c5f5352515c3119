#!/usr/bin/env python3
"""Writes the cluster snapshots under testdata/clusters/: what
`kubectl get nodes,pods,daemonsets -A -o json` prints (a v1 List), in the object formats of
docs/FORMATS.md, "Kubernetes objects" (NFD labels, DaemonSetStatus with omitempty counters,
ContainerStatus, the CrashLoopBackOff message) and "RDMA device plugins" (RDMA resources and the
plugins' ConfigMaps). Every test runs with
--now 2026-11-29T00:00:00Z.

Run from the repository root: python3 tools/make_k8s_fixtures.py
"""
import copy
import datetime
import json
import os

OUT = os.path.join(os.path.dirname(__file__), "..", "testdata", "clusters")
NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
PLUGIN_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"
NFD = "feature.node.kubernetes.io/pci-15b3.present"


def ts(days_ago=0, seconds=0):
    t = NOW - datetime.timedelta(days=days_ago, seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(type_, status, since, reason=None, message=None):
    c = {"lastHeartbeatTime": ts(0, 30), "lastTransitionTime": since, "status": status,
         "type": type_}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def node(name, fabric=True, rdma="1000", ready=True, extra_labels=None, created_days=400,
         block="blk-a"):
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
              "cloud.google.com/gce-topology-block": block}
    if fabric:
        labels[NFD] = "true"
        labels["network.nvidia.com/rdma"] = "true"
    labels.update(extra_labels or {})
    alloc = {"cpu": "190", "memory": "1980Gi", "pods": "110", "nvidia.com/gpu": "8"}
    if rdma is not None:
        alloc["rdma/hca_shared_devices_a"] = rdma
    conditions = [cond("MemoryPressure", "False", ts(created_days), "KubeletHasSufficientMemory"),
                  cond("Ready", "True" if ready else "False",
                       ts(created_days) if ready else ts(3),
                       "KubeletReady" if ready else "KubeletNotReady",
                       None if ready else "container runtime network not ready")]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "uid-node-" + name, "labels": labels,
                         "creationTimestamp": ts(created_days)},
            "spec": {"podCIDR": "10.244.0.0/24"},
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": conditions}}


def daemonset(desired, ready, created_days=300, selector=None):
    status = {"currentNumberScheduled": desired, "desiredNumberScheduled": desired,
              "numberMisscheduled": 0, "numberReady": ready, "observedGeneration": 1,
              "updatedNumberScheduled": desired}
    if ready:
        status["numberAvailable"] = ready  # omitempty: absent when 0
    if desired - ready:
        status["numberUnavailable"] = desired - ready
    spec = {"containers": [{"name": "rdma-shared-dp", "image": PLUGIN_IMAGE,
                            "securityContext": {"privileged": True}}],
            "hostNetwork": True, "nodeSelector": selector or {"network.nvidia.com/rdma": "true"}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "rdma-shared-dp-ds", "namespace": "kube-system",
                         "uid": "uid-ds-rdma", "generation": 1,
                         "creationTimestamp": ts(created_days)},
            "spec": {"selector": {"matchLabels": {"name": "rdma-shared-dp-ds"}},
                     "template": {"metadata": {"labels": {"name": "rdma-shared-dp-ds"}},
                                  "spec": spec}},
            "status": status}


def plugin_pod(node_name, ready=True, created_days=300, restarts=0):
    name = "rdma-shared-dp-ds-" + node_name[-5:]
    created = ts(created_days)
    if ready:
        conditions = [cond("Initialized", "True", created), cond("Ready", "True", ts(created_days, -20)),
                      cond("ContainersReady", "True", ts(created_days, -20))]
        cs = {"name": "rdma-shared-dp", "image": PLUGIN_IMAGE, "imageID": PLUGIN_IMAGE,
              "ready": True, "restartCount": restarts, "started": True,
              "state": {"running": {"startedAt": ts(created_days, -15)}}}
    else:
        # Never became ready: the Ready transition is the one recorded at start.
        conditions = [cond("Initialized", "True", created),
                      cond("Ready", "False", ts(created_days, -2), "ContainersNotReady",
                           "containers with unready status: [rdma-shared-dp]"),
                      cond("ContainersReady", "False", ts(created_days, -2), "ContainersNotReady")]
        cs = {"name": "rdma-shared-dp", "image": PLUGIN_IMAGE, "imageID": PLUGIN_IMAGE,
              "ready": False, "restartCount": restarts, "started": False,
              "state": {"waiting": {"reason": "CrashLoopBackOff",
                                    "message": "back-off 5m0s restarting failed "
                                               "container=rdma-shared-dp pod=%s_kube-system(uid)" % name}},
              "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                           "startedAt": ts(0, 400), "finishedAt": ts(0, 390)}}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "kube-system", "uid": "uid-pod-" + name,
                         "labels": {"name": "rdma-shared-dp-ds"}, "creationTimestamp": created,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                              "name": "rdma-shared-dp-ds", "uid": "uid-ds-rdma",
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "rdma-shared-dp", "image": PLUGIN_IMAGE}],
                     "volumes": [{"name": "device-plugin",
                                  "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}]},
            "status": {"phase": "Running", "conditions": conditions, "containerStatuses": [cs],
                       "startTime": created}}


def app_pod(name, node_name, crash_days=None):
    created = ts(crash_days + 1 if crash_days else 10)
    if crash_days:
        conditions = [cond("Ready", "False", ts(crash_days), "ContainersNotReady")]
        cs = {"name": "exporter", "image": "registry.local/metrics-exporter:2.1", "ready": False,
              "restartCount": 4032,
              "state": {"waiting": {"reason": "CrashLoopBackOff",
                                    "message": "back-off 5m0s restarting failed container=exporter"}},
              "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                           "finishedAt": ts(0, 200)}}}
    else:
        conditions = [cond("Ready", "True", ts(9))]
        cs = {"name": "exporter", "image": "registry.local/metrics-exporter:2.1", "ready": True,
              "restartCount": 0, "state": {"running": {"startedAt": ts(10)}}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "monitoring", "uid": "uid-pod-" + name,
                         "creationTimestamp": created},
            "spec": {"nodeName": node_name, "containers": [{"name": "exporter"}]},
            "status": {"phase": "Running", "conditions": conditions, "containerStatuses": [cs]}}


def train_pod(job, index, node_name, rdma=True, ipc_lock=True, shared=True, env=None,
              network="rdma-net", kind="kubeflow", created_days=2, topology=True,
              host_devices=False):
    labels = {}
    owners = []
    if kind == "kubeflow":
        labels = {"training.kubeflow.org/job-name": job,
                  "training.kubeflow.org/replica-type": "master" if index == 0 else "worker",
                  "training.kubeflow.org/replica-index": str(index)}
        owners = [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": job,
                   "uid": "uid-job-" + job, "controller": True}]
    else:
        labels = {"batch.kubernetes.io/job-name": job, "job-name": job}
        owners = [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": "uid-job-" + job,
                   "controller": True}]
    resources = {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}
    if rdma:
        resources["limits"]["rdma/hca_shared_devices_a"] = "1"
        resources["requests"]["rdma/hca_shared_devices_a"] = "1"
    envs = [{"name": "WORLD_SIZE", "value": "2"}, {"name": "NCCL_DEBUG", "value": "INFO"},
            {"name": "MASTER_ADDR", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    envs += [{"name": k, "value": v} for k, v in (env or {}).items()]
    container = {"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "env": envs,
                 "resources": resources}
    if ipc_lock:
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    if shared:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": "lustre-data"}})
    if host_devices:
        volumes.append({"name": "ib", "hostPath": {"path": "/dev/infiniband"}})
    annotations = {"k8s.v1.cni.cncf.io/networks": network} if network else {}
    name = "%s-%s-%d" % (job, "master" if index == 0 else "worker", index)
    spec = {"nodeName": node_name, "containers": [container], "volumes": volumes}
    if topology:
        # The job's pods prefer one topology block (podAffinity on the block label).
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {k: v for k, v in labels.items()
                                                  if k.endswith("job-name")}},
                "topologyKey": "cloud.google.com/gce-topology-block"}}]}}
    created = ts(created_days)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": "uid-pod-" + name,
                         "labels": labels, "annotations": annotations, "ownerReferences": owners,
                         "creationTimestamp": created},
            "spec": spec,
            "status": {"phase": "Running",
                       "conditions": [cond("Ready", "True", ts(created_days, -60))],
                       "containerStatuses": [{"name": "pytorch", "ready": True, "restartCount": 0,
                                              "image": container["image"],
                                              "state": {"running": {"startedAt": created}}}]}}


def mpi_pod(job, role, index, node_name):
    """A pod of an mpi-operator v2beta1 MPIJob: the operator labels its pods
    training.kubeflow.org/{job-name,job-role,operator-name} (defaultLabels in
    v2/pkg/controller/mpi_job_controller.go); the launcher's pod belongs to a batch Job and runs
    only mpirun, on a CPU node, without GPUs, RDMA or IPC_LOCK."""
    pod = train_pod(job, index, node_name, rdma=role == "worker", ipc_lock=role == "worker",
                    shared=role == "worker", network="rdma-net" if role == "worker" else None)
    name = "%s-%s" % (job, role) + ("-%d" % index if role == "worker" else "-x7k2p")
    meta = pod["metadata"]
    meta.update({"name": name, "uid": "uid-pod-" + name})
    meta["labels"] = {"training.kubeflow.org/job-name": job,
                      "training.kubeflow.org/job-role": role,
                      "training.kubeflow.org/operator-name": "mpi-operator"}
    if role == "worker":
        meta["labels"]["training.kubeflow.org/replica-index"] = str(index)
        meta["ownerReferences"][0].update({"apiVersion": "kubeflow.org/v2beta1",
                                           "kind": "MPIJob"})
    else:
        meta["labels"].update({"batch.kubernetes.io/job-name": job + "-launcher",
                               "job-name": job + "-launcher"})
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                    "name": job + "-launcher", "uid": "uid-job-launcher-" + job,
                                    "controller": True}]
        container = pod["spec"]["containers"][0]
        container.update({"name": "launcher", "image": "mpioperator/openmpi:0.6.0",
                          "resources": {}})
    return pod


SRIOV_IMAGE = "ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.9.0"
SRIOV_RDMA = "mellanox.com/ib_rdma"
# The SR-IOV network device plugin's ConfigMap (deployments/configMap.yaml: sriovdp-config,
# key config.json; README "Config parameters"): an isRdma pool with its own resourcePrefix, and
# an Ethernet pool without RDMA under the default prefix (intel.com).
SRIOV_CONFIG = {"resourceList": [
    {"resourceName": "ib_rdma", "resourcePrefix": "mellanox.com",
     "selectors": [{"vendors": ["15b3"], "devices": ["101e"], "drivers": ["mlx5_core"],
                    "linkTypes": ["infiniband"], "isRdma": True}]},
    {"resourceName": "sriov_eth", "selectors": {"vendors": ["15b3"], "linkTypes": ["ether"]}}]}


def sriov_cluster(healthy, gpu_nodes):
    """healthy.json with the SR-IOV network device plugin in place of the shared RDMA plugin."""
    out = []
    for obj in copy.deepcopy(healthy):
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "Node" and meta["name"] in gpu_nodes:
            for key in ("allocatable", "capacity"):
                obj["status"][key].pop("rdma/hca_shared_devices_a", None)
                obj["status"][key][SRIOV_RDMA] = "8"
                obj["status"][key]["intel.com/sriov_eth"] = "8"
        elif kind == "DaemonSet":
            meta.update({"name": "kube-sriov-device-plugin", "uid": "uid-ds-sriov"})
            spec = obj["spec"]["template"]["spec"]
            spec["containers"] = [{"name": "kube-sriovdp", "image": SRIOV_IMAGE,
                                   "args": ["--log-dir=sriovdp", "--log-level=10"],
                                   "volumeMounts": [{"name": "config-volume",
                                                     "mountPath": "/etc/pcidp"}]}]
            spec["volumes"] = [{"name": "config-volume",
                                "configMap": {"name": "sriovdp-config",
                                              "items": [{"key": "config.json",
                                                         "path": "config.json"}]}}]
        elif kind == "Pod" and meta["namespace"] == "kube-system":
            meta["name"] = meta["name"].replace("rdma-shared-dp-ds", "kube-sriov-device-plugin")
            meta["ownerReferences"][0].update({"name": "kube-sriov-device-plugin",
                                               "uid": "uid-ds-sriov"})
        elif kind == "Pod":
            for c in obj["spec"]["containers"]:
                for amounts in c.get("resources", {}).values():
                    if "rdma/hca_shared_devices_a" in amounts:
                        amounts[SRIOV_RDMA] = amounts.pop("rdma/hca_shared_devices_a")
        out.append(obj)
    out.append({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "sriovdp-config", "namespace": "kube-system",
                             "creationTimestamp": ts(300)},
                "data": {"config.json": json.dumps(SRIOV_CONFIG, indent=2)}})
    return out


def as_list(items):
    return {"apiVersion": "v1", "kind": "List", "items": items,
            "metadata": {"resourceVersion": ""}}


def write(name, obj):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(obj, f, indent=4)
        f.write("\n")


def to_yaml(obj, indent=0):
    """A small block-YAML emitter, enough for kubectl-shaped objects (strings quoted)."""
    pad = "  " * indent
    lines = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                lines.append("%s%s:" % (pad, k))
                lines.append(to_yaml(v, indent + 1))
            else:
                lines.append("%s%s: %s" % (pad, k, scalar(v)))
    else:
        for v in obj:
            if isinstance(v, dict) and v:
                inner = to_yaml(v, indent + 1).split("\n")
                lines.append("%s- %s" % (pad, inner[0].strip()))
                lines.extend(inner[1:])
            else:
                lines.append("%s- %s" % (pad, scalar(v)))
    return "\n".join(lines)


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return "{}" if isinstance(v, dict) else "[]"
    return json.dumps(v)


def main():
    os.makedirs(OUT, exist_ok=True)
    gpu_nodes = ["gpu-node-%02d" % i for i in range(1, 4)]

    healthy = [node(n) for n in gpu_nodes] + [node("cpu-node-01", fabric=False, rdma=None)]
    healthy += [daemonset(3, 3)] + [plugin_pod(n) for n in gpu_nodes]
    healthy += [app_pod("exporter-a", "cpu-node-01")]
    healthy += [train_pod("llama-pt", 0, "gpu-node-01"), train_pod("llama-pt", 1, "gpu-node-02")]
    # An MPIJob whose launcher runs mpirun on the CPU node; its workers hold the fabric.
    healthy += [mpi_pod("bert-mpi", "launcher", 0, "cpu-node-01"),
                mpi_pod("bert-mpi", "worker", 0, "gpu-node-02"),
                mpi_pod("bert-mpi", "worker", 1, "gpu-node-03")]
    write("healthy.json", as_list(healthy))
    with open(os.path.join(OUT, "healthy.yaml"), "w") as f:
        f.write(to_yaml(as_list(healthy)) + "\n")

    # A healthy SR-IOV cluster: its RDMA pool is named only by the plugin's own config.
    write("sriov.json", as_list(sriov_cluster(healthy, gpu_nodes)))

    # The seed's failure: the device plugin crash-looped on every node for 271 days, the restart
    # counters in the tens of thousands, the last exit minutes ago.
    crash = [node(n, rdma=None) for n in gpu_nodes] + [node("cpu-node-01", fabric=False, rdma=None)]
    crash += [daemonset(3, 0, created_days=271)]
    crash += [plugin_pod(n, ready=False, created_days=271, restarts=77904) for n in gpu_nodes]
    write("plugin-crashloop.json", as_list(crash))

    # A fabric node the plugin's nodeSelector excludes (it lacks network.nvidia.com/rdma): no
    # plugin pod there, so no RDMA resource either.
    excluded = copy.deepcopy(healthy)
    extra = node("gpu-node-04", rdma=None, created_days=30)
    del extra["metadata"]["labels"]["network.nvidia.com/rdma"]
    excluded.insert(3, extra)
    write("selector-excluded.json", as_list(excluded))

    # A node whose plugin runs but found no device (advertises 0), a NotReady CPU node, and an
    # exporter pod crash looping for 12 days.
    zero = [node("gpu-node-01"), node("gpu-node-02", rdma="0"), node("gpu-node-03"),
            node("cpu-node-01", fabric=False, rdma=None, ready=False)]
    zero += [daemonset(3, 3)] + [plugin_pod(n) for n in gpu_nodes]
    zero += [app_pod("exporter-b", "gpu-node-01", crash_days=12)]
    write("zero-rdma.json", as_list(zero))

    # Multi-node jobs gone wrong: a PyTorchJob without RDMA, spread over two topology blocks and
    # onto a CPU node; a Job that turns IB off, lacks IPC_LOCK, shared storage and a topology
    # constraint, and mounts /dev/infiniband by hostPath.
    bad = [node("gpu-node-01"), node("gpu-node-02"), node("gpu-node-03", block="blk-b"),
           node("cpu-node-01", fabric=False, rdma=None)]
    bad += [daemonset(3, 3)] + [plugin_pod(n) for n in gpu_nodes]
    bad += [train_pod("llama-ft", 0, "gpu-node-01", rdma=False),
            train_pod("llama-ft", 1, "gpu-node-03", rdma=False),
            train_pod("llama-ft", 2, "cpu-node-01", rdma=False)]
    bad += [train_pod("nccl-bench", i, n, ipc_lock=False, shared=False, network=None, kind="job",
                      env={"NCCL_IB_DISABLE": "1"}, created_days=1, topology=False,
                      host_devices=True)
            for i, n in enumerate(["gpu-node-01", "gpu-node-02"])]
    write("jobs-bad.json", as_list(bad))

    # One *List per file, as `kubectl get nodes -o json` prints it.
    write("nodes-only.json", {"apiVersion": "v1", "kind": "NodeList",
                              "items": [{k: v for k, v in node(n).items() if k != "kind"}
                                        for n in gpu_nodes]})


if __name__ == "__main__":
    main()
