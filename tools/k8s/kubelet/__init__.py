"""The test kubelet (tools/k8s/kubelet.py is its entry point and says what it does), in modules:

    constants  the kubelet's constants, the Linux ones for ctypes, the log line
    times      RFC 3339 and CRI timestamps, Go durations (pure)
    logs       CRI log lines, the log writer (LogPump), what `kubectl logs` shows
    status     back-off, restart policy, pod phase and conditions, termination message (pure)
    api        the API client and watch
    env        a container's env (fieldRef, resourceFieldRef, secrets, configMaps), $(VAR), argv
    netns      setns, the node namespaces on a bridge, the `kubernetes` Service forwarder
    volumes    a pod's volumes under its state folder
    pods       PodWorker: one pod's containers, restarts, probes, status, termination
    nodes      Node: registration, heartbeats, Lease, the pod watch
    server     the kubelet's HTTPS API (container logs, healthz)
    child      the container child: namespaces, mounts, exec
    main       the Kubelet and the command line

A module imports only those above it (no cycles); the child imports constants and netns only.
"""
