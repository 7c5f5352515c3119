#!/usr/bin/env python3
"""A synthetic cluster for scale tests: writes one List (kubectl get -o json shape) with N nodes,
the device-plugin DaemonSet and M pods, to serve with server.py --snapshot.

Nodes: GPU nodes on the RDMA fabric (labels, allocatable nvidia.com/gpu and
rdma/hca_shared_devices_a, in topology blocks of 32) and CPU nodes. Pods: one device-plugin
pod per fabric node (owned by the DaemonSet; crash-looping on --crashloop-fraction of them), one
8-GPU training worker per fabric node (PyTorchJobs of --job-size workers, NCCL_* env, rdma
requests), and small service pods for the rest, spread over every node (at most 110 a node).
Deterministic: the same flags give the same file.
"""
import argparse
import json
import random

TS = "2026-11-28T23:59:30Z"
CREATED = "2026-03-03T00:00:00Z"
PLUGIN_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"


def cond(type_, status, reason=None, since=CREATED):
    c = {"lastHeartbeatTime": TS, "lastTransitionTime": since, "status": status, "type": type_}
    if reason:
        c["reason"] = reason
    return c


def node(name, fabric, block):
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    alloc = {"cpu": "190", "memory": "1980Gi", "pods": "110"}
    if fabric:
        labels.update({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                       "cloud.google.com/gce-topology-block": "blk-%03d" % block,
                       "feature.node.kubernetes.io/pci-15b3.present": "true",
                       "network.nvidia.com/rdma": "true"})
        alloc.update({"nvidia.com/gpu": "8", "rdma/hca_shared_devices_a": "1000"})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "uid-node-" + name, "labels": labels,
                         "creationTimestamp": "2025-10-25T00:00:00Z"},
            "spec": {"podCIDR": "10.%d.%d.0/24" % (block // 256 % 256, block % 256)},
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": [cond("MemoryPressure", "False",
                                           "KubeletHasSufficientMemory"),
                                      cond("Ready", "True", "KubeletReady")],
                       "nodeInfo": {"kubeletVersion": "v1.30.4",
                                    "osImage": "Ubuntu 22.04.4 LTS",
                                    "kernelVersion": "5.15.0-105-generic",
                                    "containerRuntimeVersion": "containerd://1.7.13"}}}


def daemonset(fabric_nodes, crashing):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "rdma-shared-dp-ds", "namespace": "kube-system",
                         "uid": "uid-ds-rdma", "generation": 1, "creationTimestamp": CREATED},
            "spec": {"selector": {"matchLabels": {"name": "rdma-shared-dp-ds"}},
                     "template": {"metadata": {"labels": {"name": "rdma-shared-dp-ds"}},
                                  "spec": {"containers": [{"name": "rdma-shared-dp",
                                                           "image": PLUGIN_IMAGE,
                                                           "securityContext": {
                                                               "privileged": True}}],
                                           "hostNetwork": True,
                                           "nodeSelector": {"network.nvidia.com/rdma": "true"}}}},
            "status": {"currentNumberScheduled": fabric_nodes,
                       "desiredNumberScheduled": fabric_nodes, "numberMisscheduled": 0,
                       "numberReady": fabric_nodes - crashing, "observedGeneration": 1,
                       "updatedNumberScheduled": fabric_nodes, "numberUnavailable": crashing}}


def pod(name, ns, node_name, containers, statuses, ready, labels=None, owner=None,
        annotations=None, phase="Running", volumes=None):
    meta = {"name": name, "namespace": ns, "uid": "uid-pod-" + name, "labels": labels or {},
            "creationTimestamp": CREATED}
    if owner:
        meta["ownerReferences"] = [dict(owner, controller=True, blockOwnerDeletion=True)]
    if annotations:
        meta["annotations"] = annotations
    spec = {"nodeName": node_name, "containers": containers}
    if volumes:
        spec["volumes"] = volumes
    not_ready = None if ready else "ContainersNotReady"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase,
                       "conditions": [cond("Initialized", "True"),
                                      cond("Ready", "True" if ready else "False", not_ready),
                                      cond("ContainersReady", "True" if ready else "False",
                                           not_ready)],
                       "containerStatuses": statuses, "startTime": CREATED}}


def running(name, image, restarts=0):
    return {"name": name, "image": image, "imageID": image, "ready": True,
            "restartCount": restarts, "started": True,
            "state": {"running": {"startedAt": CREATED}}}


def plugin_pod(node_name, crashing, rng):
    name = "rdma-shared-dp-ds-" + node_name
    if crashing:
        status = {"name": "rdma-shared-dp", "image": PLUGIN_IMAGE, "imageID": PLUGIN_IMAGE,
                  "ready": False, "restartCount": rng.randint(50, 80000), "started": False,
                  "state": {"waiting": {"reason": "CrashLoopBackOff",
                                        "message": "back-off 5m0s restarting failed container="
                                                   "rdma-shared-dp pod=%s_kube-system" % name}},
                  "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                               "startedAt": "2026-11-28T23:53:20Z",
                                               "finishedAt": "2026-11-28T23:53:30Z"}}}
    else:
        status = running("rdma-shared-dp", PLUGIN_IMAGE)
    return pod(name, "kube-system", node_name,
               [{"name": "rdma-shared-dp", "image": PLUGIN_IMAGE}], [status], not crashing,
               labels={"name": "rdma-shared-dp-ds"},
               owner={"apiVersion": "apps/v1", "kind": "DaemonSet",
                      "name": "rdma-shared-dp-ds", "uid": "uid-ds-rdma"},
               volumes=[{"name": "device-plugin",
                         "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}])


def worker_pod(job, index, size, node_name):
    name = "%s-worker-%d" % (job, index)
    image = "nvcr.io/nvidia/pytorch:25.01-py3"
    gpu = {"nvidia.com/gpu": "8", "rdma/hca_shared_devices_a": "1"}
    env = [{"name": "WORLD_SIZE", "value": str(size)},
           {"name": "NCCL_DEBUG", "value": "INFO"},
           {"name": "NCCL_IB_HCA", "value": "mlx5_0,mlx5_1,mlx5_2,mlx5_3"},
           {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
           {"name": "MASTER_ADDR", "value": "%s-worker-0" % job}]
    container = {"name": "pytorch", "image": image, "env": env,
                 "resources": {"limits": gpu, "requests": dict(gpu)},
                 "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}
    return pod(name, "ml", node_name, [container], [running("pytorch", image)], True,
               labels={"training.kubeflow.org/job-name": job,
                       "training.kubeflow.org/replica-type": "worker",
                       "training.kubeflow.org/replica-index": str(index)},
               owner={"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": job,
                      "uid": "uid-job-" + job},
               annotations={"k8s.v1.cni.cncf.io/networks": "rdma-net"},
               volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory"}}])


def service_pod(i, node_name, rng):
    name = "svc-%06d" % i
    image = "registry.local/service:1.%d" % (i % 7)
    container = {"name": "app", "image": image,
                 "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}}
    phase, ready, status = "Running", True, running("app", image, rng.choice((0, 0, 0, 1, 2)))
    if rng.random() < 0.01:
        phase, ready = "Pending", False
        status = {"name": "app", "image": image, "imageID": "", "ready": False,
                  "restartCount": 0, "started": False,
                  "state": {"waiting": {"reason": "ContainerCreating"}}}
    return pod(name, "svc-%02d" % (i % 20), node_name, [container], [status], ready,
               labels={"app": "svc-%03d" % (i % 500)},
               owner={"apiVersion": "apps/v1", "kind": "ReplicaSet",
                      "name": "svc-%03d-5d4f8" % (i % 500), "uid": "uid-rs-%03d" % (i % 500)},
               phase=phase)


def cluster(nodes, pods, fabric_fraction=0.9, crashloop_fraction=1.0, job_size=16, seed=1):
    rng = random.Random(seed)
    n_fabric = int(nodes * fabric_fraction)
    names = ["gpu-node-%05d" % i for i in range(n_fabric)] + \
            ["cpu-node-%05d" % i for i in range(nodes - n_fabric)]
    items = [node(n, i < n_fabric, i // 32) for i, n in enumerate(names)]
    crashing = int(n_fabric * crashloop_fraction)
    items.append(daemonset(n_fabric, crashing))
    out = []
    for i in range(min(n_fabric, pods)):
        out.append(plugin_pod(names[i], i < crashing, rng))
    workers = min(n_fabric, pods - len(out))
    for i in range(workers):
        size = min(job_size, workers - i // job_size * job_size)  # the last job may be smaller
        out.append(worker_pod("train-%04d" % (i // job_size), i % job_size, size, names[i]))
    for i in range(pods - len(out)):
        out.append(service_pod(i, names[i % len(names)], rng))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": items + out}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--pods", type=int, default=100000)
    p.add_argument("--fabric-fraction", type=float, default=0.9,
                   help="share of the nodes that are GPU nodes on the RDMA fabric")
    p.add_argument("--crashloop-fraction", type=float, default=1.0,
                   help="share of the fabric nodes whose device-plugin pod crash-loops")
    p.add_argument("--job-size", type=int, default=16, help="workers per training job")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("-o", "--out", required=True, help="the snapshot file to write")
    args = p.parse_args()
    if args.nodes < 1 or args.pods < 0 or args.pods > 110 * args.nodes:
        p.error("need at least one node and at most 110 pods a node")
    doc = cluster(args.nodes, args.pods, args.fabric_fraction, args.crashloop_fraction,
                  args.job_size, args.seed)
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
