"""Pod status as the kubelet computes it: back-off, restart policy, phase, conditions and the
termination message. Pure (unit-tested in tests/k8s/kubelet_test.py)."""

from .constants import BACKOFF_INITIAL, BACKOFF_MAX, FALLBACK_BYTES, FALLBACK_LINES, MAX_TERMINATION_MESSAGE
from .logs import render_log
from .times import rfc3339


class Backoff:
    """client-go's flowcontrol.Backoff as the kubelet uses it (10 s doubling to 5 min; an entry not
    updated for 2 * max = 10 min expires)."""

    def __init__(self, initial=BACKOFF_INITIAL, maximum=BACKOFF_MAX):
        self.initial, self.maximum = initial, maximum
        self.delay = None
        self.last_update = None

    def _expired(self, event_time):
        return event_time - self.last_update > 2 * self.maximum

    def in_backoff_since(self, event_time, now):
        """True while `now` is within the current delay after `event_time` (the container's finish)."""
        if self.delay is None or self._expired(event_time):
            return False
        return now - event_time < self.delay

    def next(self, now):
        if self.delay is None or self._expired(now):
            self.delay = self.initial
        else:
            self.delay = min(self.delay * 2, self.maximum)
        self.last_update = now

    def get(self):
        return self.delay or 0


def should_restart(restart_policy, exit_code):
    if restart_policy == "Always":
        return True
    if restart_policy == "OnFailure":
        return exit_code != 0
    return False


def pod_phase(restart_policy, init_statuses, statuses, init_done):
    """kubelet's getPhase (1.20) over the container statuses we report."""
    for s in init_statuses:
        t = s.get("state", {}).get("terminated")
        if t and t.get("exitCode") != 0 and restart_policy == "Never":
            return "Failed"
    if not init_done:
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for s in statuses:
        st = s.get("state", {})
        if "running" in st:
            running += 1
        elif "terminated" in st:
            stopped += 1
            if st["terminated"].get("exitCode") == 0:
                succeeded += 1
        elif "waiting" in st:
            if s.get("lastState", {}).get("terminated"):
                stopped += 1
            else:
                waiting += 1
    if waiting > 0:
        return "Pending"
    if running > 0:
        return "Running"
    if stopped > 0:
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if restart_policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def pod_conditions(old_conditions, phase, init_names_incomplete, unready_names, now):
    """Initialized / ContainersReady / Ready (and PodScheduled kept), with lastTransitionTime kept
    while a condition's status does not change."""
    old = {c.get("type"): c for c in old_conditions or []}
    out = []

    def cond(ctype, status, reason=None, message=None):
        c = {"type": ctype, "status": status, "lastProbeTime": None}
        prev = old.get(ctype)
        c["lastTransitionTime"] = (prev.get("lastTransitionTime") if prev and prev.get("status") == status
                                   and prev.get("lastTransitionTime") else rfc3339(now))
        if reason:
            c["reason"] = reason
        if message:
            c["message"] = message
        out.append(c)

    if init_names_incomplete:
        cond("Initialized", "False", "ContainersNotInitialized",
             "containers with incomplete status: [%s]" % " ".join(init_names_incomplete))
    elif phase == "Succeeded":
        cond("Initialized", "True", "PodCompleted")
    else:
        cond("Initialized", "True")
    for ctype in ("Ready", "ContainersReady"):
        if phase in ("Succeeded", "Failed"):
            cond(ctype, "False", "PodCompleted")
        elif unready_names:
            cond(ctype, "False", "ContainersNotReady",
                 "containers with unready status: [%s]" % " ".join(unready_names))
        else:
            cond(ctype, "True")
    ps = old.get("PodScheduled")
    if ps:
        out.append(ps)
    else:
        cond("PodScheduled", "True")
    order = {"Initialized": 0, "Ready": 1, "ContainersReady": 2, "PodScheduled": 3}
    return sorted(out, key=lambda c: order[c["type"]])


def termination_message(file_bytes, policy, exit_code, log_bytes):
    msg = file_bytes[-MAX_TERMINATION_MESSAGE:] if file_bytes else b""
    if not msg and policy == "FallbackToLogsOnError" and exit_code != 0 and log_bytes:
        msg = render_log(log_bytes, tail_lines=FALLBACK_LINES, limit_bytes=FALLBACK_BYTES)
    return msg.decode(errors="replace")
