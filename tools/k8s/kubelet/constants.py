"""The test kubelet's constants (as the real kubelet has them where it has them), the
Linux ones its ctypes calls need, and its own log line."""

import os
import sys
import time

LOG_CAP = 10 * 1024 * 1024
LINE_SPLIT = 16 * 1024
MAX_TERMINATION_MESSAGE = 4096
FALLBACK_LINES = 80
FALLBACK_BYTES = 2048
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0
LEASE_SECONDS = 40
HEARTBEAT = 10.0
API_TIMEOUT = 15.0
MAX_GRACE = 30
KUBELET_PORT = 10250
POD_LOG_ROOT = "/var/log/pods"  # hostPath volumes of it get the node's own (see Volumes.prepare)
# The folder of the kubelet's PodResources socket: hostPath volumes of it get the node's own, an
# empty folder (this kubelet serves no PodResources: the agent's attribution reports it down).
POD_RESOURCES_ROOT = "/var/lib/kubelet/pod-resources"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1

# The entry point: the container child is started as `python3 -I ENTRY_POINT --exec-container SPEC`.
ENTRY_POINT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kubelet.py")


def log(msg):
    sys.stderr.write("kubelet %s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()
