#!/usr/bin/env python3
"""The test kubelet: runs the pods that a real Kubernetes 1.20 control plane binds to test nodes.

Test infrastructure, not product (issue 15). Python 3.11 standard library only. Started by
tools/k8s/up.sh; `python3 tools/k8s/kubelet.py --help` lists the flags.

What it does, as the real kubelet does it:
- Registers every node of --nodes (a v1 NodeList): creates the Node with the admin client certificate
  (labels, annotations, taints), reports nodes/status with the node's own bearer token (capacity,
  allocatable, nodeInfo, addresses, daemonEndpoints, Ready/MemoryPressure/DiskPressure/PIDPressure with
  heartbeats), renews the node Lease in kube-node-lease every 10 s, and removes the
  node.kubernetes.io/not-ready taint that the TaintNodesByCondition admission plugin adds at creation
  (with the admin certificate: NodeRestriction forbids a node to change its own taints).
- Watches the pods bound to each node (list, then watch from the resourceVersion; resumes on drop,
  relists on 410) and runs every container's command + args as a real process (the image is ignored;
  an image whose name contains "tocsin" runs --tocsin). Init containers first, in order. Env from
  values, fieldRef, resourceFieldRef, secretKeyRef, configMapKeyRef and envFrom, with $(VAR) expansion.
- Reports pod status: phase, conditions, containerStatuses (restartCount, waiting ContainerCreating /
  CrashLoopBackOff, terminated with the termination message, lastState), podIP, hostIP, startTime.
  Back-off 10 s doubling to 5 min, reset after 10 min, as the kubelet's flowcontrol.Backoff.
- Serves GET /containerLogs/NS/POD/CONTAINER (follow, tailLines, previous, timestamps, limitBytes,
  sinceSeconds) and /healthz over HTTPS with client certificates, so `kubectl logs` works.
- On pod deletion: SIGTERM to the container process groups, SIGKILL after the grace period (at most
  30 s), then deletes the pod object with gracePeriodSeconds=0 as the node.

As root: one mount namespace per container, where secret, configMap, downwardAPI, emptyDir, projected
and hostPath volumes are bind-mounted at their mountPath (mount points missing on the host are created
there, empty, and left: the host's filesystem is the containers' root filesystem). With --netns-prefix
P, node i (1-based, NodeList order) gets network namespace Pi with eth0 = 10.78.0.i/24 on the bridge
Pbr (10.78.0.254/24 in the root namespace), its kubelet API on 10.78.0.i:10250 and, for the
`kubernetes` Service, a forwarder on 127.0.0.1:<apiserver port> inside the namespace to the apiserver.
Nothing is routed anywhere else. --subnet (default 10.78.0) moves the /24 so that two test kubelets
can run at once (the kubelet serving certificate needs SANs for the node addresses). Without root:
no namespaces, no mounts (the container log says so), every node's address is 127.0.0.1 and all
nodes share one kubelet API port.

Networking for multi-pod workloads: pods share their node's network namespace (as hostNetwork pods
do), so status.podIP == status.hostIP == the node's address and two pods on one node cannot listen on
the same port. There is no cluster DNS and no kube-proxy: a workload finds its rank 0 either from the
API (the rank 0 pod's status.podIP, e.g. read by an init container through KUBERNETES_SERVICE_HOST and
the mounted ServiceAccount token) or from a fixed node address: pin rank 0 to node i with
spec.nodeName or a nodeSelector and use 10.78.0.i (127.0.0.1 without namespaces).

Probes: an exec readinessProbe runs in the container's namespaces (period, timeout, thresholds);
without one, or with an httpGet/tcpSocket one, a container is ready when it runs. Liveness and startup
probes are ignored.

The ready file (--ready-file) is JSON: {"nodes": {NAME: ADDRESS}, "kubeletPort", "pid", "root",
"namespaces"}. On SIGTERM every container process group gets SIGTERM, then SIGKILL after 2 s, and the
namespaces and bridge are deleted. A SIGKILLed kubelet leaves its namespaces (the next start with the
same prefix deletes them); its containers' direct processes die with it (PR_SET_PDEATHSIG), what they
started in the background may not.

Not done: lifecycle hooks, resource limits, service links other than `kubernetes`, image pulls, PID
and UTS namespaces, hostname.

This file is the entry point; the code is the package tools/k8s/kubelet/ (its __init__ lists the
modules). The container child is this file too: `python3 -I kubelet.py --exec-container SPEC`.
"""

import os
import sys

# `python3 -I` (how the container child is started) leaves this folder off sys.path. The package
# tools/k8s/kubelet/ wins over this file for `import kubelet`.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def run(argv):
    if len(argv) == 2 and argv[0] == "--exec-container":
        from kubelet.child import exec_container  # every container start: import only the child's part
        exec_container(argv[1])
        return 0
    from kubelet.main import main
    return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
