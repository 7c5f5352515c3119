#!/usr/bin/env python3
"""The OCI image `make image` writes (tools/image/build.sh): one image for every component, with
the non-root user 65532 as its default, no shell, no package manager and no setuid program, under
60 MB; and it runs: `tocsin --version`, and an agent on a fixture node whose /metrics a scrape
reads. It runs in podman when podman can run a container here, else the unpacked root filesystem
is run with chroot as user 65532 (the test says which).

    python3 tests/image/image_test.py -v     # TOCSIN_IMAGE=build/image/tocsin.oci.tar

`make test` runs it on an image of the test build's binary, made by the same tools/image/build.sh
(the size check is then skipped: it is the release image's, `make image`).

Needs umoci; podman optional.
"""

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = os.environ.get("TOCSIN_IMAGE", os.path.join(ROOT, "build", "image", "tocsin.oci.tar"))
FIXTURE = os.path.join(ROOT, "testdata", "nodes", "ib-port-down")
GOAL_BYTES = 60 * 1000 * 1000


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(tocsin VERSION ([0-9.]+)", f.read()).group(1)


class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(IMAGE):
            raise unittest.SkipTest(f"no image at {IMAGE}: make image")
        cls.tmp = tempfile.mkdtemp(prefix="tocsin-image-test-")
        layout = os.path.join(cls.tmp, "layout")
        with tarfile.open(IMAGE) as t:
            t.extractall(layout)
        with open(os.path.join(layout, "index.json")) as f:
            index = json.load(f)
        cls.tags = [m["annotations"]["org.opencontainers.image.ref.name"]
                    for m in index["manifests"]]
        cls.tag = cls.tags[0]
        cls.bundle = os.path.join(cls.tmp, "bundle")
        subprocess.run(["umoci", "unpack", "--image", f"{layout}:{cls.tag}", cls.bundle],
                       check=True, capture_output=True, timeout=120)
        cls.rootfs = os.path.join(cls.bundle, "rootfs")
        with open(os.path.join(cls.bundle, "config.json")) as f:
            cls.runtime = json.load(f)
        cls.podman = cls.podman_works()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def podman_works(cls):
        if shutil.which("podman") is None:
            return False
        r = subprocess.run(["podman", "run", "--rm", "--network", "none", f"oci-archive:{IMAGE}",
                            "--version"], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(f"image_test: podman cannot run a container here, using chroot: {r.stderr[-500:]}",
                  file=sys.stderr)
            return False
        return True

    def run_in_image(self, args, **kw):
        if self.podman:
            return subprocess.Popen(["podman", "run", "--rm", "--network", "host", "-v",
                                     f"{FIXTURE}:/fixture:ro", f"oci-archive:{IMAGE}", *args],
                                    start_new_session=True, **kw)
        fixture = os.path.join(self.rootfs, "fixture")
        if not os.path.exists(fixture):
            shutil.copytree(FIXTURE, fixture, symlinks=True)
        # A container has /proc; a bare chroot has not: a private mount and pid namespace give
        # it one, and the chroot dies with unshare (--kill-child) when the test stops it.
        return subprocess.Popen(["unshare", "--mount", "--pid", "--fork", "--kill-child",
                                 f"--mount-proc={os.path.join(self.rootfs, 'proc')}",
                                 "chroot", "--userspec=65532:65532", self.rootfs,
                                 "/usr/local/bin/tocsin", *args], start_new_session=True, **kw)

    def test_tagged_with_the_version(self):
        self.assertEqual(self.tags, [project_version()])

    def test_runs_as_non_root_with_tocsin_as_entrypoint(self):
        process = self.runtime["process"]
        self.assertEqual((process["user"]["uid"], process["user"]["gid"]), (65532, 65532))
        self.assertEqual(process["args"][0], "/usr/local/bin/tocsin")
        with open(os.path.join(self.rootfs, "etc", "passwd")) as f:
            self.assertIn("tocsin:x:65532:65532:", f.read())

    def test_no_shell_no_package_manager_no_setuid(self):
        for path in ("bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/dpkg", "usr/bin/apt",
                     "usr/bin/apt-get", "usr/bin/passwd", "usr/bin/su"):
            self.assertFalse(os.path.lexists(os.path.join(self.rootfs, path)), path)
        programs, setuid = [], []
        for dirpath, _, files in os.walk(self.rootfs):
            for name in files:
                p = os.path.join(dirpath, name)
                if os.path.islink(p):
                    continue
                mode = os.lstat(p).st_mode
                if mode & 0o6000:
                    setuid.append(p)
                if mode & 0o111 and not re.search(r"\.so(\.[0-9.]+)?$|ld-linux", name):
                    programs.append(os.path.relpath(p, self.rootfs))
        self.assertEqual(setuid, [])
        self.assertEqual(programs, ["usr/local/bin/tocsin"])

    def test_size_within_goal(self):
        if os.environ.get("TOCSIN_IMAGE_OF_TEST_BUILD"):
            self.skipTest("an image of the test build (sanitizers, debug info): its size says "
                          "nothing; `make image` builds the release image, measured in "
                          "docs/BENCHMARKS.md")
        size = os.path.getsize(IMAGE)
        unpacked = sum(os.lstat(os.path.join(d, f)).st_size
                       for d, _, files in os.walk(self.rootfs) for f in files)
        print(f"image_test: archive {size / 1e6:.1f} MB, unpacked {unpacked / 1e6:.1f} MB",
              file=sys.stderr)
        self.assertLessEqual(size, GOAL_BYTES)

    def test_version(self):
        p = self.run_in_image(["--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.strip(), f"tocsin {project_version()}")

    def test_modules_and_what_they_link_are_in_the_image(self):
        """The admission webhook's and the agent's attribution modules sit where
        /usr/local/bin/tocsin looks for them (../lib/tocsin/), and the image's own dynamic loader
        resolves every library they link."""
        for name, lib in (("tocsin-https.so", "libssl.so.3"),
                          ("tocsin-podresources.so", "libgrpc++_unsecure.so")):
            module = "/usr/local/lib/tocsin/" + name
            self.assertTrue(os.path.isfile(os.path.join(self.rootfs, module.lstrip("/"))), name)
            r = subprocess.run(["chroot", self.rootfs, "/lib64/ld-linux-x86-64.so.2", "--list",
                                module], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("not found", r.stdout)
            self.assertIn(lib, r.stdout)

    def test_agent_serves_metrics_of_a_fixture_node(self):
        p = self.run_in_image(["agent", "--no-kube", "--root", "/fixture", "--listen",
                               "127.0.0.1:0", "--reconcile", "200ms"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            port, lines = None, []
            deadline = time.monotonic() + 60
            while port is None and time.monotonic() < deadline:
                ready, _, _ = select.select([p.stderr], [], [], deadline - time.monotonic())
                if not ready:
                    break
                line = p.stderr.readline()  # the agent logs as it starts; EOF if it died
                if not line:
                    break
                lines.append(line)
                m = re.search(r"serving .* on 127\.0\.0\.1:([0-9]+)", line)
                if m:
                    port = int(m.group(1))
            self.assertIsNotNone(port, "".join(lines[-20:]))
            text = ""
            while time.monotonic() < deadline and "tocsin_rdma_port_up{" not in text:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
                if "tocsin_rdma_port_up{" not in text:
                    time.sleep(0.2)  # polling an HTTP endpoint the agent fills on its own schedule
            self.assertRegex(text, r'tocsin_rdma_port_up\{[^}]*\} 0')
        finally:
            self.stop(p)

    @staticmethod
    def stop(p):
        """SIGTERM to the whole session, then SIGKILL: under chroot --userspec the agent is no
        longer killed with unshare (a change of uid clears its parent-death signal), and it holds
        the stderr pipe open."""
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.communicate(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
        raise AssertionError("the agent in the image did not stop")


if __name__ == "__main__":
    unittest.main()
