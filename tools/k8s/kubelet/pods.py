"""One pod on one node: its containers' processes, restarts with back-off, readiness probes,
status reports and termination."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

from .api import ApiError
from .constants import ENTRY_POINT, MAX_GRACE, MAX_TERMINATION_MESSAGE, log
from .env import expand_vars, resolve_argv
from .status import Backoff, pod_conditions, pod_phase, should_restart, termination_message
from .times import go_duration, parse_time, rfc3339


class Container:
    def __init__(self, spec, init):
        self.spec, self.name, self.init = spec, spec["name"], init
        self.proc = None
        self.pump = None
        self.cid = ""
        self.started_at = None
        self.waiting = ("ContainerCreating", None)
        self.term = None         # the current instance's terminated state
        self.last_term = None
        self.restarts = 0
        self.instances = 0       # how many times started
        self.backoff = Backoff()
        self.log_path = None
        self.term_file = None
        self.probe_ok = False    # the exec readinessProbe's verdict for the current instance

    def exit_code(self):
        return self.term["exitCode"] if self.term else None


class PodWorker:
    def __init__(self, kubelet, node, pod):
        self.k, self.node, self.pod = kubelet, node, pod
        meta = pod["metadata"]
        self.uid, self.ns, self.name = meta["uid"], meta["namespace"], meta["name"]
        self.key = "%s/%s" % (self.ns, self.name)
        self.dir = os.path.join(kubelet.state, "pods", self.uid)
        spec = pod["spec"]
        self.policy = spec.get("restartPolicy", "Always")
        self.inits = [Container(c, True) for c in spec.get("initContainers") or []]
        self.ctrs = [Container(c, False) for c in spec.get("containers") or []]
        self.start_time = parse_time((pod.get("status") or {}).get("startTime")) or time.time()
        self.wake = threading.Event()
        self.vanished = False
        self.volumes_ready = False
        self.volume_error = None
        self.last_sent = None
        self.conditions = (pod.get("status") or {}).get("conditions") or []
        self.done = False
        self.thread = threading.Thread(target=self.run, daemon=True, name="pod " + self.key)

    # -- API-facing
    def update(self, pod):
        self.pod = pod
        self.wake.set()

    def vanish(self):
        self.vanished = True
        self.wake.set()

    def container(self, name):
        for c in self.inits + self.ctrs:
            if c.name == name:
                return c
        return None

    # -- main loop
    def run(self):
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        log("pod %s on %s: starting" % (self.key, self.node.name))
        try:
            while not self.k.stop.is_set():
                try:
                    if self.vanished or self.pod["metadata"].get("deletionTimestamp"):
                        self.terminate()
                        return
                    self.reap()
                    self.step()
                    self.report()
                except Exception as e:  # noqa: BLE001 - one pod never kills the kubelet
                    log("pod %s: %s" % (self.key, e))
                    if not isinstance(e, (ApiError, OSError)):
                        traceback.print_exc()
                self.wake.wait(0.25 if self.any_running() else 1.0)
                self.wake.clear()
        finally:
            self.done = True
            if not self.k.stop.is_set():
                self.kill_all(0)

    def any_running(self):
        return any(c.proc is not None for c in self.inits + self.ctrs)

    def init_done(self):
        return all(c.term is not None and c.term["exitCode"] == 0 for c in self.inits)

    def reap(self):
        for c in self.inits + self.ctrs:
            if c.proc is None or c.proc.poll() is None:
                continue
            self.finish(c)

    def finish(self, c):
        rc = c.proc.returncode
        code = rc if rc >= 0 else 128 - rc
        try:
            os.killpg(c.proc.pid, signal.SIGKILL)  # whatever the main process left behind
        except OSError:
            pass
        self.k.release_proc(c.proc)
        c.proc = None
        now = time.time()
        c.pump.finish_after(2)
        c.pump.done.wait(3)
        msg_file = b""
        if c.term_file:
            try:
                with open(c.term_file, "rb") as f:
                    f.seek(0, os.SEEK_END)
                    size = f.tell()
                    f.seek(max(0, size - MAX_TERMINATION_MESSAGE))
                    msg_file = f.read()
            except OSError:
                pass
        log_bytes = b""
        if c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError" and code != 0:
            try:
                with open(c.log_path, "rb") as f:
                    log_bytes = f.read()
            except OSError:
                pass
        t = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
             "startedAt": rfc3339(c.started_at), "finishedAt": rfc3339(now), "containerID": c.cid,
             "_finished": now}
        message = termination_message(msg_file, c.spec.get("terminationMessagePolicy"), code, log_bytes)
        if message:
            t["message"] = message
        if code > 128:
            t["signal"] = code - 128
        c.term = t
        log("pod %s container %s exited %d" % (self.key, c.name, code))

    def step(self):
        now = time.time()
        if not self.volumes_ready:
            try:
                self.k.volumes.prepare(self)
                self.volumes_ready = True
                self.volume_error = None
            except Exception as e:  # noqa: BLE001
                self.volume_error = "test kubelet: volumes not ready: %s" % e
                for c in self.inits + self.ctrs:
                    c.waiting = ("ContainerCreating", self.volume_error)
                return
        for c in self.inits:
            if c.term is not None and c.term["exitCode"] == 0:
                continue
            if c.proc is not None:
                return
            if c.term is not None:
                if self.policy == "Never":
                    return  # pod Failed
                if not self.restart_due(c, now):
                    return
            self.start(c)
            return
        for c in self.ctrs:
            if c.proc is not None:
                continue
            if c.term is not None:
                if not should_restart(self.policy, c.term["exitCode"]):
                    continue
                if not self.restart_due(c, now):
                    continue
            self.start(c)

    def restart_due(self, c, now):
        """kubelet's doBackOff: CrashLoopBackOff while within the back-off after the last finish."""
        finished = c.term["_finished"]
        if c.backoff.in_backoff_since(finished, now):
            c.waiting = ("CrashLoopBackOff", "back-off %s restarting failed container=%s pod=%s_%s(%s)"
                         % (go_duration(c.backoff.get()), c.name, self.name, self.ns, self.uid))
            return False
        c.backoff.next(now)
        return True

    def start(self, c):
        try:
            env = self.k.env_for(self, c.spec)
        except Exception as e:  # noqa: BLE001
            c.waiting = ("CreateContainerConfigError", str(e))
            return
        image = c.spec.get("image", "") or ""
        argv, note = resolve_argv(c.spec, "tocsin" in image, self.k.tocsin)
        if argv is not None:
            argv = [expand_vars(a, env) for a in argv]
        logdir = os.path.join(self.dir, "logs", c.name)
        os.makedirs(logdir, exist_ok=True)
        self.k.link_pod_logs(self)
        log_path = os.path.join(logdir, "%d.log" % c.instances)
        if os.path.exists(log_path):
            os.unlink(log_path)
        # Keep the current and the previous instance's logs, as the kubelet does.
        for old in os.listdir(logdir):
            if old.endswith(".log") and old[:-4].isdigit() and int(old[:-4]) < c.instances - 1:
                os.unlink(os.path.join(logdir, old))
        try:
            proc, term_file, pump = self.k.spawn(self, c, argv, note, env, log_path)
        except (OSError, RuntimeError) as e:
            if c.waiting != ("CreateContainerError", str(e)):
                log("pod %s container %s: %s" % (self.key, c.name, e))
            c.waiting = ("CreateContainerError", str(e))
            return
        if proc is None:
            c.waiting = ("ContainerCreating", "test kubelet: at its process cap (--max-procs %d)"
                         % self.k.max_procs)
            return
        if c.term is not None:
            c.last_term = c.term
            c.restarts += 1
        c.proc, c.term_file, c.pump, c.log_path = proc, term_file, pump, log_path
        c.instances += 1
        c.term = None
        c.started_at = time.time()
        c.cid = "tocsin-test://" + hashlib.sha256(
            ("%s/%s/%d/%f" % (self.uid, c.name, c.instances, c.started_at)).encode()).hexdigest()
        c.waiting = None
        c.probe_ok = False
        probe = c.spec.get("readinessProbe") or {}
        if "exec" in probe and not c.init:
            threading.Thread(target=self.probe_loop, args=(c, proc, probe), daemon=True,
                             name="probe " + c.name).start()
        log("pod %s container %s started (pid %d)" % (self.key, c.name, proc.pid))

    def probe_loop(self, c, proc, probe):
        """An exec readinessProbe, run in the container's namespaces while this instance runs."""
        with open(os.path.join(self.dir, "%s-%d.json" % (c.name, c.instances - 1))) as f:
            spec = json.load(f)
        spec["argv"] = probe["exec"].get("command") or ["false"]
        spec["notes"] = []
        spec["mounts"] = [m for m in spec["mounts"] if not m["dst"].endswith("termination-log")]
        spec_path = os.path.join(self.dir, "%s-%d-probe.json" % (c.name, c.instances - 1))
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        period = max(1, probe.get("periodSeconds", 10))
        timeout = max(1, probe.get("timeoutSeconds", 1))
        need_ok, need_bad = max(1, probe.get("successThreshold", 1)), max(1, probe.get("failureThreshold", 3))
        oks = bads = 0
        if self.k.stop.wait(probe.get("initialDelaySeconds", 0)):
            return
        while c.proc is proc and not self.k.stop.is_set():
            try:
                r = subprocess.run([sys.executable, "-I", ENTRY_POINT, "--exec-container",
                                    spec_path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=self.k.env_for(self, c.spec),
                                   timeout=timeout + 1, start_new_session=True)
                ok = r.returncode == 0
            except Exception:  # noqa: BLE001 - a probe that cannot run or times out fails
                ok = False
            oks, bads = (oks + 1, 0) if ok else (0, bads + 1)
            if c.proc is proc and (oks >= need_ok and not c.probe_ok or bads >= need_bad and c.probe_ok):
                c.probe_ok = ok
                self.wake.set()
            if self.k.stop.wait(period):
                return

    def container_status(self, c):
        image = c.spec.get("image", "") or ""
        s = {"name": c.name, "image": image,
             "imageID": "tocsin-test://sha256:" + hashlib.sha256(image.encode()).hexdigest()
             if c.instances else "",
             "ready": False, "restartCount": c.restarts, "started": False}
        if c.cid:
            s["containerID"] = c.cid
        if c.proc is not None:
            s["state"] = {"running": {"startedAt": rfc3339(c.started_at)}}
            s["ready"] = not c.init and ("exec" not in (c.spec.get("readinessProbe") or {})
                                         or c.probe_ok)
            s["started"] = True
        elif c.term is not None and (c.init and c.term["exitCode"] == 0
                                     or not self.will_restart(c)):
            s["state"] = {"terminated": {k: v for k, v in c.term.items() if not k.startswith("_")}}
            s["ready"] = c.init and c.term["exitCode"] == 0
        elif c.term is not None:
            reason, msg = c.waiting or ("CrashLoopBackOff", None)
            w = {"reason": reason}
            if msg:
                w["message"] = msg
            s["state"] = {"waiting": w}
            last = c.term
            s["lastState"] = {"terminated": {k: v for k, v in last.items() if not k.startswith("_")}}
        else:
            reason, msg = c.waiting or ("ContainerCreating", None)
            if not c.init and reason == "ContainerCreating" and not msg and not self.init_done():
                reason = "PodInitializing"
            w = {"reason": reason}
            if msg:
                w["message"] = msg
            s["state"] = {"waiting": w}
        if "lastState" not in s:
            s["lastState"] = ({"terminated": {k: v for k, v in c.last_term.items()
                                              if not k.startswith("_")}} if c.last_term else {})
        return s

    def will_restart(self, c):
        if self.vanished or self.pod["metadata"].get("deletionTimestamp"):
            return False
        if c.init:
            return self.policy != "Never"
        return should_restart(self.policy, c.term["exitCode"])

    def compute_status(self):
        now = time.time()
        inits = [self.container_status(c) for c in self.inits]
        ctrs = [self.container_status(c) for c in self.ctrs]
        phase = pod_phase(self.policy, inits, ctrs, self.init_done())
        incomplete = [c.name for c in self.inits if not (c.term and c.term["exitCode"] == 0)]
        unready = [s["name"] for s in ctrs if not s["ready"]]
        conds = pod_conditions(self.conditions, phase, incomplete, unready, now)
        ip = self.node.address
        st = {"phase": phase, "conditions": conds, "hostIP": ip, "podIP": ip, "podIPs": [{"ip": ip}],
              "startTime": rfc3339(self.start_time), "containerStatuses": ctrs}
        if inits:
            st["initContainerStatuses"] = inits
        return st

    def report(self):
        st = self.compute_status()
        if st == self.last_sent:
            return
        self.node.api.call("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (self.ns, self.name),
                           {"status": st}, ctype="application/strategic-merge-patch+json")
        self.last_sent = st
        self.conditions = st["conditions"]

    def kill_all(self, grace):
        procs = [c.proc for c in self.inits + self.ctrs if c.proc is not None]
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.time() + grace
        while time.time() < deadline and any(p.poll() is None for p in procs):
            if self.k.stop.is_set():
                break
            time.sleep(0.1)
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.reap()

    def terminate(self):
        meta, spec = self.pod["metadata"], self.pod["spec"]
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        grace = max(0, min(int(grace), MAX_GRACE))
        log("pod %s: %s, killing (grace %ds)" % (self.key, "vanished" if self.vanished else "deleted", grace))
        self.kill_all(grace)
        if not self.vanished:
            for attempt in range(5):
                try:
                    try:
                        if any(c.instances for c in self.inits + self.ctrs):
                            self.report()
                    except ApiError as e:
                        if e.status != 404:
                            raise
                    self.node.api.call(
                        "DELETE", "/api/v1/namespaces/%s/pods/%s" % (self.ns, self.name),
                        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                         "preconditions": {"uid": self.uid}}, ok=(200, 202, 404, 409))
                    break
                except (ApiError, OSError) as e:
                    log("pod %s: delete: %s" % (self.key, e))
                    if self.k.stop.wait(1 + attempt):
                        break
        self.k.forget(self)
