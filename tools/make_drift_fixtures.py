#!/usr/bin/env python3
"""Writes the staging/production snapshot pairs under testdata/drift/ for `tocsin diff`: what
`kubectl get nodes,daemonsets,configmaps,network-attachment-definitions,sriovnetworknodepolicies,
nicclusterpolicies,jobs,cronjobs,pytorchjobs -A -o json` prints (a v1 List), in the formats of
docs/FORMATS.md, "Fabric configuration" and "RDMA device plugins".

  staging.json      3 GPU nodes (p5.48xlarge, H100) and a CPU node; the shared RDMA device plugin
                    and its ConfigMap; the network operator's NicClusterPolicy; a macvlan network
                    attachment; an SR-IOV node policy; a PyTorchJob and a CronJob template
  prod.json         the same cluster with the seeded differences of SEEDED (below), other node
                    names, more nodes, other uids, versions and timestamps
  prod-volatile.json  staging with only volatile differences: node names and count, uids,
                    resourceVersions, timestamps, generations, managedFields, DaemonSet counters,
                    restart counts, namespaces, the DaemonSet's and ConfigMap's names
  staging-copy.json   staging, byte for byte another file

Run from the repository root: python3 tools/make_drift_fixtures.py
For bench/diff.sh: python3 tools/make_drift_fixtures.py --synth NODES --side staging|prod OUT
writes one side of the pair with NODES GPU nodes (prod: the seeded differences).
"""
import argparse
import copy
import json
import os

OUT = os.path.join(os.path.dirname(__file__), "..", "testdata", "drift")


def fabric(fw="28.39.1002", driver="24.10-0.7.0", link="InfiniBand"):
    hcas = [{"name": "mlx5_%d" % i, "fw": fw, "board_id": "MT_0000000838", "link_layer": link,
             "rate": "400 Gb/sec (4X NDR)", "mtu": "4096"} for i in range(4)]
    return json.dumps({"v": 1, "driver": driver, "hcas": hcas}, separators=(",", ":"))


def node(name, uid, rv, created, gpu=True, rdma="63", kernel="6.8.0-45-generic",
         driver=("550", "54", "15"), fw="28.39.1002", ready_since="2026-11-01T00:00:00Z"):
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64",
              "topology.kubernetes.io/zone": "us-east-1a"}
    alloc = {"cpu": "190", "memory": "2000Gi", "pods": "110"}
    ann = {"node.alpha.kubernetes.io/ttl": "0",
           "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    if gpu:
        labels.update({
            "node.kubernetes.io/instance-type": "p5.48xlarge",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/cuda.driver.major": driver[0],
            "nvidia.com/cuda.driver.minor": driver[1],
            "nvidia.com/cuda.driver.rev": driver[2],
            "nvidia.com/cuda.runtime.major": "12",
            "nvidia.com/cuda.runtime.minor": "4",
            "feature.node.kubernetes.io/pci-15b3.present": "true",
            "feature.node.kubernetes.io/rdma.available": "true",
            "feature.node.kubernetes.io/kernel-version.full": kernel,
        })
        alloc["nvidia.com/gpu"] = "8"
        alloc["rdma/hca_shared_devices_a"] = rdma
        ann["tocsin.io/fabric"] = fabric(fw=fw)
    else:
        labels["node.kubernetes.io/instance-type"] = "m5.2xlarge"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": uid, "resourceVersion": rv,
                     "creationTimestamp": created, "labels": labels, "annotations": ann,
                     "managedFields": [{"manager": "kubelet", "operation": "Update",
                                        "time": created}]},
        "spec": {"providerID": "aws:///us-east-1a/i-" + uid[:8]},
        "status": {
            "allocatable": alloc, "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "lastHeartbeatTime": "2026-11-29T00:00:00Z",
                            "lastTransitionTime": ready_since}],
            "nodeInfo": {"kernelVersion": kernel, "osImage": "Ubuntu 22.04.4 LTS",
                         "containerRuntimeVersion": "containerd://1.7.12",
                         "kubeletVersion": "v1.30.2", "kubeProxyVersion": "v1.30.2",
                         "operatingSystem": "linux", "architecture": "amd64",
                         "machineID": uid + "m", "systemUUID": uid + "s", "bootID": uid + "b"}},
    }


def plugin_ds(ns, name, image_tag="v1.5.1", desired=3, gen=1, cm="rdma-devices"):
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "uid": "ds-" + name, "generation": gen,
                     "resourceVersion": str(1000 + gen), "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"selector": {"matchLabels": {"name": name}},
                 "template": {"metadata": {"labels": {"name": name}},
                              "spec": {"nodeSelector": {"feature.node.kubernetes.io/pci-15b3.present": "true"},
                                       "containers": [{"name": "rdma-shared-dp",
                                                       "image": "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:" + image_tag,
                                                       "args": ["--config-file", "/k8s-rdma-shared-dev-plugin/config.json"]}],
                                       "volumes": [{"name": "config", "configMap": {"name": cm}}]}}},
        "status": {"currentNumberScheduled": desired, "desiredNumberScheduled": desired,
                   "numberMisscheduled": 0, "numberReady": desired, "numberAvailable": desired,
                   "observedGeneration": gen, "updatedNumberScheduled": desired},
    }


def plugin_cm(ns, name="rdma-devices", hca_max=63, selectors=None):
    sel = selectors or {"vendors": ["15b3"], "ifNames": ["ibp12s0", "ibp75s0"]}
    cfg = {"periodicUpdateInterval": 300,
           "configList": [{"resourceName": "hca_shared_devices_a", "rdmaHcaMax": hca_max,
                           "selectors": sel}]}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "uid": "cm-" + name, "resourceVersion": "77"},
            "data": {"config.json": json.dumps(cfg, indent=2)}}


def nad(ns, master="ens1f0", mtu=9000, ipam="whereabouts", rv="5"):
    cfg = {"cniVersion": "0.3.1", "name": "rdma-net", "type": "macvlan", "master": master,
           "mode": "bridge", "mtu": mtu, "ipam": {"type": ipam, "range": "192.168.100.0/24"}}
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": "rdma-net", "namespace": ns, "uid": "nad-" + ns,
                         "resourceVersion": rv, "generation": 1,
                         "annotations": {"k8s.v1.cni.cncf.io/resourceName": "rdma/hca_shared_devices_a"}},
            "spec": {"config": json.dumps(cfg)}}


def sriov_policy(ns, name="ib-vfs", num_vfs=8):
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": {"name": name, "namespace": ns, "uid": "sp-" + name, "resourceVersion": "9"},
            "spec": {"resourceName": "sriov_ib", "deviceType": "netdevice", "isRdma": True,
                     "linkType": "IB", "mtu": 4096, "numVfs": num_vfs, "priority": 90,
                     "nicSelector": {"vendor": "15b3", "deviceID": "101e", "pfNames": ["ibp12s0"]},
                     "nodeSelector": {"feature.node.kubernetes.io/pci-15b3.present": "true"}}}


def nic_policy(ofed="24.10-0.7.0.0", rv="3"):
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy", "uid": "ncp", "resourceVersion": rv},
            "spec": {"ofedDriver": {"image": "doca-driver", "repository": "nvcr.io/nvidia/mellanox",
                                    "version": ofed, "upgradePolicy": {"autoUpgrade": True}},
                     "secondaryNetwork": {"multus": {"image": "multus-cni",
                                                     "repository": "ghcr.io/k8snetworkplumbingwg",
                                                     "version": "v4.1.0"}}},
            "status": {"state": "ready"}}


def env(d):
    return [{"name": k, "value": v} for k, v in d.items()]


NCCL = {"NCCL_IB_HCA": "mlx5", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO",
        "UCX_TLS": "rc", "PATH": "/usr/bin"}


def pytorchjob(ns, extra_env=None, gpus="8"):
    e = dict(NCCL)
    e.update(extra_env or {})
    pod = {"spec": {"containers": [{"name": "pytorch", "image": "train:2026.11",
                                    "env": env(e),
                                    "resources": {"requests": {"cpu": "90", "nvidia.com/gpu": gpus,
                                                               "rdma/hca_shared_devices_a": "1"},
                                                  "limits": {"nvidia.com/gpu": gpus,
                                                             "rdma/hca_shared_devices_a": "1"}}}]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "llm-pretrain", "namespace": ns, "uid": "pj-" + ns},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": copy.deepcopy(pod)},
                                             "Worker": {"replicas": 15, "template": copy.deepcopy(pod)}}},
            "status": {"conditions": [{"type": "Running", "status": "True",
                                       "lastTransitionTime": "2026-11-28T00:00:00Z"}]}}


def cronjob(ns, ifname="eth0", ucx="rc"):
    e = dict(NCCL, NCCL_SOCKET_IFNAME=ifname, UCX_TLS=ucx)
    pod = {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "nccl-tests", "image": "nccl-tests:2.13", "env": env(e)}]}}
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly-allreduce", "namespace": ns, "uid": "cj-" + ns},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": pod}}},
            "status": {"lastScheduleTime": "2026-11-28T03:00:00Z"}}


def cron_run(ns, stamp):
    """A Job the CronJob created: owned, so not a template of its own."""
    job = cronjob(ns)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "nightly-allreduce-" + stamp, "namespace": ns, "uid": "j" + stamp,
                         "ownerReferences": [{"kind": "CronJob", "name": "nightly-allreduce",
                                              "uid": "cj-" + ns, "controller": True}]},
            "spec": job["spec"]["jobTemplate"]["spec"]}


def plugin_pod(ns, ds, node_name, restarts):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": ds + "-" + node_name[-5:], "namespace": ns,
                         "uid": "pod-" + node_name, "ownerReferences": [{"kind": "DaemonSet", "name": ds, "uid": "ds-" + ds}]},
            "spec": {"nodeName": node_name, "containers": [{"name": "rdma-shared-dp", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "rdma-shared-dp", "ready": True,
                                              "restartCount": restarts, "image": "x"}]}}


def cluster(prefix, gpu_nodes, ns="training", sys_ns="kube-system", ds_name="rdma-shared-dp-ds",
            cm_name="rdma-devices", rv_base=100, created="2026-03-01T00:00:00Z", **seeds):
    nodes = []
    for i in range(gpu_nodes):
        kw = {}
        for key in ("rdma", "kernel", "driver", "fw"):
            if key in seeds:
                kw[key] = seeds[key]
        if seeds.get("outlier_fw") and i == 1:
            kw["fw"] = seeds["outlier_fw"]
        nodes.append(node("%s-gpu-%05d" % (prefix, i), "%s%04d-uid" % (prefix, i),
                          str(rv_base + i), created, **kw))
    if seeds.get("cpu", True):
        nodes.append(node(prefix + "-cpu-000", prefix + "cpu-uid", str(rv_base + 99), created, gpu=False))
    items = list(nodes)
    items.append(plugin_ds(sys_ns, ds_name, seeds.get("plugin_tag", "v1.5.1"), gpu_nodes,
                           gen=rv_base % 7 + 1, cm=cm_name))
    items.append(plugin_cm(sys_ns, cm_name, seeds.get("hca_max", 63), seeds.get("selectors")))
    for n in nodes[:gpu_nodes]:
        items.append(plugin_pod(sys_ns, ds_name, n["metadata"]["name"], rv_base % 5))
    items.append(nad(ns, seeds.get("master", "ens1f0"), seeds.get("mtu", 9000),
                     seeds.get("ipam", "whereabouts"), rv=str(rv_base)))
    items.append(sriov_policy("nvidia-network-operator", num_vfs=seeds.get("num_vfs", 8)))
    items.append(nic_policy(seeds.get("ofed", "24.10-0.7.0.0"), rv=str(rv_base + 1)))
    items.append(pytorchjob(ns, seeds.get("pytorch_env"), seeds.get("gpus", "8")))
    items.append(cronjob(ns, seeds.get("ifname", "eth0"), seeds.get("ucx", "rc")))
    items.append(cron_run(ns, str(29000000 + rv_base)))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": items}


# The seeded differences of prod.json; tests/integration/diff_test.cc expects exactly the
# findings they cause.
SEEDED = dict(
    hca_max=127, rdma="127",                    # drift.rdma.resource x2 (pool, class)
    plugin_tag="v1.5.2",                        # drift.plugin.image
    selectors={"vendors": ["15b3"], "ifNames": ["ibp12s0"]},  # drift.plugin.config
    master="ens2f0", mtu=4096, ipam="nv-ipam",  # drift.network.attachment x3
    num_vfs=4,                                  # drift.network.sriov-policy
    pytorch_env={"NCCL_IB_DISABLE": "1"},       # drift.template.nccl (error)
    gpus="4",                                   # drift.template.resources x2
    ifname="bond0",                             # drift.template.nccl (warning)
    ucx="rc,ud",                                # drift.template.env
    driver=("560", "35", "03"),                 # drift.node.driver (class)
    ofed="25.01-0.6.0.0",                       # drift.node.driver (NicClusterPolicy)
    fw="28.40.1000", outlier_fw="28.39.1002",   # drift.node.firmware, drift.class.mixed
    kernel="6.8.0-49-generic",                  # drift.node.software x2 (nodeInfo, NFD label)
    cpu=False,                                  # drift.class.missing
)


def write(name, doc):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--synth", type=int, help="GPU nodes of a synthetic side (bench/diff.sh)")
    p.add_argument("--side", choices=["staging", "prod"], default="staging")
    p.add_argument("out", nargs="?")
    args = p.parse_args()
    if args.synth:
        seeds = SEEDED if args.side == "prod" else {}
        doc = cluster("stg" if args.side == "staging" else "prd", args.synth, **seeds)
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
        return
    os.makedirs(OUT, exist_ok=True)
    staging = cluster("stg", 3)
    write("staging.json", staging)
    write("staging-copy.json", staging)
    write("prod.json", cluster("prd", 6, ns="ml-prod", rv_base=5000,
                               created="2025-09-01T00:00:00Z", **SEEDED))
    write("prod-volatile.json",
          cluster("prod-zz", 11, ns="ml-prod", sys_ns="rdma", ds_name="rdma-plugin",
                  cm_name="rdma-plugin-config", rv_base=70000, created="2024-05-05T05:05:05Z"))


if __name__ == "__main__":
    main()
