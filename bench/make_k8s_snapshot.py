#!/usr/bin/env python3
"""Writes a large `kubectl get nodes,pods,daemonsets -A -o json` snapshot: NODES nodes (one in 10
without RDMA hardware) in blocks of 32, the RDMA device plugin on every fabric node (crash looping
on 1%), and PODS pods: plugin pods plus 8-pod PyTorchJobs (some without an RDMA request), in the
formats of tools/make_k8s_fixtures.py.

usage: make_k8s_snapshot.py PATH NODES PODS
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import make_k8s_fixtures as fx  # noqa: E402

path, n_nodes, n_pods = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as f:
    f.write('{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [\n')
    first = True

    def emit(obj):
        global first
        if not first:
            f.write(",\n")
        first = False
        json.dump(obj, f, indent=4)

    fabric = []
    for i in range(n_nodes):
        name = "gpu-node-%05d" % i
        is_fabric = i % 10 != 9
        emit(fx.node(name, fabric=is_fabric, rdma="1000" if is_fabric else None,
                     block="blk-%d" % (i // 32)))
        if is_fabric:
            fabric.append(name)
    bad = max(1, len(fabric) // 100)
    emit(fx.daemonset(len(fabric), len(fabric) - bad))
    pods = 0
    for i, name in enumerate(fabric):
        emit(fx.plugin_pod(name, ready=i >= bad, restarts=0 if i >= bad else 5000))
        pods += 1
    job = 0
    while pods < n_pods:
        for r in range(8):
            node = fabric[(job * 8 + r) % len(fabric)]
            emit(fx.train_pod("job-%06d" % job, r, node, rdma=job % 50 != 0))
            pods += 1
        job += 1
    f.write("\n]}\n")
