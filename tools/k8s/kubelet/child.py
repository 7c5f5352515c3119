"""The container child: runs before the container's command, in the process the kubelet started
(`kubelet.py --exec-container SPEC`): network namespace, mount namespace and bind mounts, then exec.
Imports little, as every container start pays for it."""

import json
import os
import signal
import sys

from .constants import (CLONE_NEWNET, CLONE_NEWNS, MS_BIND, MS_PRIVATE, MS_RDONLY, MS_REC, MS_REMOUNT,
                        PR_SET_PDEATHSIG)
from .netns import check_rc, libc, setns


def exec_container(spec_path):
    """Runs in the child, before the container's command: namespaces, mounts, then exec."""
    with open(spec_path) as f:
        spec = json.load(f)
    try:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:  # noqa: BLE001
        pass
    for n in spec.get("notes") or []:
        print(n, flush=True)
    try:
        if spec.get("netns"):
            fd = os.open(spec["netns"], os.O_RDONLY)
            setns(fd, CLONE_NEWNET)
            os.close(fd)
        if spec.get("mounts"):
            check_rc(libc().unshare(CLONE_NEWNS), "unshare")
            check_rc(libc().mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
            for m in spec["mounts"]:
                src, dst = m["src"], m["dst"]
                if os.path.isdir(src):
                    os.makedirs(dst, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    if not os.path.exists(dst):
                        open(dst, "a").close()
                check_rc(libc().mount(src.encode(), dst.encode(), None, MS_BIND | MS_REC, None),
                         "bind %s at %s" % (src, dst))
                if m["ro"]:
                    check_rc(libc().mount(b"none", dst.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY,
                                          None), "read-only %s" % dst)
        wd = spec.get("workingDir") or "/"
        try:
            os.chdir(wd)
        except OSError:
            os.makedirs(wd, exist_ok=True)
            os.chdir(wd)
    except OSError as e:
        print("test kubelet: cannot set up the container: %s" % e, file=sys.stderr, flush=True)
        os._exit(128)
    argv = spec.get("argv")
    if argv is None:
        while True:
            signal.pause()
    try:
        os.execvpe(argv[0], argv, os.environ)
    except OSError as e:
        print('exec: "%s": %s' % (argv[0], e.strerror), file=sys.stderr, flush=True)
        os._exit(127)
