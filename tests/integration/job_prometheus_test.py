#!/usr/bin/env python3
"""`tocsin job` end to end on a real Prometheus (issue 20): tools/make_job_fixtures.py writes four
4-node jobs of one cluster as the agents export them (90 minutes at 15 s, ending at the minute
before now), `promtool tsdb create-blocks-from openmetrics` backfills them, and Prometheus serves
that TSDB. Over the last hour: the job with a rank on sockets yields exactly job.fabric.fallback
on that node, the checkpoint stall exactly job.storage.stall on its four nodes (an episode that
ended), the straggler exactly job.network.straggler on its slow node, the healthy job nothing;
each with the onset the fixture set. Then the recording rules of the group tocsin-job are
backfilled over the same window (`promtool tsdb create-blocks-from rules`): `tocsin job` then reads
the recorded series and finds the same verdicts and onsets as from the expressions, and every
panel of the Job fabric dashboard returns series for the straggler's job.

Needs promtool and prometheus (tools/deps.sh); TOCSIN_BINARY is the built tocsin."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOCSIN = os.environ.get("TOCSIN_BINARY", os.path.join(ROOT, "build", "test", "tocsin"))
DASHBOARD = os.path.join(ROOT, "deploy", "base", "dashboards", "tocsin-job-fabric.json")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class JobPrometheusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tocsin-job-e2e-")
        cls.prom = None
        # The fixture ends at the last whole minute: inside Prometheus's retention, and the same
        # bytes for the same minute.
        cls.end = int(time.time()) // 60 * 60 - 60
        om = os.path.join(cls.tmp, "job.om")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_job_fixtures.py"),
                        "--openmetrics", om, "--end", str(cls.end)], check=True, timeout=120)
        cls.tsdb = os.path.join(cls.tmp, "tsdb")
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, cls.tsdb],
                       check=True, timeout=300, capture_output=True)
        cls.start_prometheus()

    @classmethod
    def start_prometheus(cls):
        cls.port = free_port()
        cls.url = f"http://127.0.0.1:{cls.port}"
        with open(os.path.join(cls.tmp, "prometheus.yml"), "w") as f:
            f.write("global: {evaluation_interval: 15s}\n")
        cls.log = open(os.path.join(cls.tmp, "prometheus.log"), "ab")
        cls.prom = subprocess.Popen(
            ["prometheus", f"--config.file={cls.tmp}/prometheus.yml",
             f"--storage.tsdb.path={cls.tsdb}", f"--web.listen-address=127.0.0.1:{cls.port}",
             "--storage.tsdb.retention.time=2d"], stdout=cls.log, stderr=cls.log)
        deadline = time.monotonic() + 60
        while True:  # bounded: Prometheus loads the blocks, then says it is ready
            try:
                with urllib.request.urlopen(cls.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if cls.prom.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("prometheus did not become ready: " +
                                   open(os.path.join(cls.tmp, "prometheus.log")).read()[-2000:])
            time.sleep(0.1)

    @classmethod
    def stop_prometheus(cls):
        if cls.prom is not None:
            cls.prom.terminate()
            try:
                cls.prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                cls.prom.kill()
                cls.prom.wait()
            cls.log.close()
            cls.prom = None

    @classmethod
    def tearDownClass(cls):
        cls.stop_prometheus()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def job(self, name, *extra, output="json"):
        r = subprocess.run([TOCSIN, "job", f"ml/{name}", "--prometheus", self.url,
                            "--since", "1h", "--until", rfc3339(self.end), "--fail-on", "warning",
                            "-o", output, *extra], capture_output=True, text=True, timeout=60)
        return r

    def verdicts(self, name, *extra):
        r = self.job(name, *extra)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(report["inventory"]["dropped"], {"series": 0, "points": 0})
        return r.returncode, report, {(f["check"], f["subject"]): f for f in report["findings"]}

    def test_fallback_yields_exactly_its_verdict(self):
        rc, report, found = self.verdicts("fallback")
        self.assertEqual(rc, 1)
        self.assertEqual(set(found), {("job.fabric.fallback", "fb-2")})
        f = found["job.fabric.fallback", "fb-2"]
        self.assertEqual(f["since"], rfc3339(self.end - 50 * 60))  # the fault began at minute 40
        self.assertTrue(f["evidence"]["ongoing"])
        self.assertEqual(f["evidence"]["alert"], "TocsinJobFabricFallback")
        nodes = report["inventory"]["nodes"]
        self.assertEqual(sorted(nodes), ["fb-1", "fb-2", "fb-3", "fb-4"])
        self.assertEqual(nodes["fb-2"]["nccl_transports"], {"IB": 1, "Socket": 1})

    def test_checkpoint_stall_yields_exactly_its_verdict_with_its_end(self):
        rc, _, found = self.verdicts("ckpt")
        self.assertEqual(rc, 1)
        self.assertEqual(set(found), {("job.storage.stall", f"ck-{i}") for i in range(1, 5)})
        for f in found.values():
            # The probe's p99 is a rate over 5 minutes: the stall shows from its first slow
            # probe, within a minute of the fault (minute 50), and outlasts it by that window.
            since = time.mktime(time.strptime(f["since"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
            self.assertLessEqual(abs(since - (self.end - 40 * 60)), 60, f["since"])
            self.assertFalse(f["evidence"]["ongoing"])
            self.assertGreater(f["evidence"]["series"]["tocsin:job_node_storage_probe_p99_seconds"],
                               0.5)

    def test_straggler_yields_exactly_its_verdict(self):
        rc, _, found = self.verdicts("straggler")
        self.assertEqual(rc, 1)
        self.assertEqual(set(found), {("job.network.straggler", "sg-3")})
        f = found["job.network.straggler", "sg-3"]
        self.assertEqual(f["since"], rfc3339(self.end - 45 * 60))
        self.assertGreater(f["evidence"]["peers_median_bytes_per_second"], 1e10)

    def test_healthy_job_yields_nothing(self):
        rc, report, found = self.verdicts("healthy")
        self.assertEqual((rc, found), (0, {}))
        self.assertEqual(len(report["inventory"]["nodes"]), 4)

    def test_table_and_plot(self):
        plot = os.path.join(self.tmp, "fallback.svg")
        r = self.job("fallback", "--plot", plot, output="table")
        self.assertEqual(r.returncode, 1, r.stderr)
        rows = [line.strip() for line in r.stdout.splitlines() if line.strip().startswith("fb-")]
        self.assertEqual(len(rows), 4, r.stdout)
        self.assertIn("Socket x1", next(line for line in rows if line.startswith("fb-2")))
        self.assertIn("job.fabric.fallback", r.stdout)
        svg = ET.parse(plot).getroot()  # well-formed XML
        ns = "{http://www.w3.org/2000/svg}"
        self.assertEqual(len(svg.findall(f"{ns}g")), 3)
        self.assertEqual(len(svg.findall(f".//{ns}polyline")), 4 * 4)  # GPU, RDMA, Ethernet, p99

    def test_input_errors_exit_2(self):
        r = self.job("no-such-job")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no tocsin_pod_info", r.stderr)
        r = subprocess.run([TOCSIN, "job", "ml/fallback", "--prometheus",
                            f"http://127.0.0.1:{free_port()}", "--timeout", "2s"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = subprocess.run([TOCSIN, "job", "fallback", "--prometheus", self.url],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_zz_dashboard_panels_return_series(self):
        """Last (zz): restarts Prometheus with the recording rules backfilled."""
        with open(os.path.join(ROOT, "deploy", "agent", "alerts.yaml")) as f:
            groups = [g for g in yaml.safe_load(f)["groups"] if g["name"] == "tocsin-job"]
        # Two passes: promtool evaluates each rule on its own against this Prometheus, and the
        # bitmask reads the other records, which only the first pass's blocks hold.
        records = [r for r in groups[0]["rules"] if "record" in r]
        for n, batch in enumerate((records[:-1], records[-1:])):
            self.assertEqual(records[-1]["record"], "tocsin:job_node_verdicts:bitmask")
            rules = os.path.join(self.tmp, f"job-rules-{n}.yaml")
            with open(rules, "w") as f:
                yaml.safe_dump({"groups": [{"name": "tocsin-job", "rules": batch}]}, f)
            out = os.path.join(self.tmp, f"rule-blocks-{n}")
            r = subprocess.run(["promtool", "tsdb", "create-blocks-from", "rules",
                                f"--start={self.end - 3600}", f"--end={self.end}",
                                "--eval-interval=60s", f"--url={self.url}", f"--output-dir={out}",
                                rules], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.stop_prometheus()
            for block in os.listdir(out):
                shutil.move(os.path.join(out, block), os.path.join(self.tsdb, block))
            type(self).start_prometheus()
        # With the records there for the whole window, `tocsin job` reads them (--source auto)
        # instead of re-evaluating their expressions, and finds the same verdicts and onsets.
        for name in ("fallback", "ckpt", "straggler", "healthy"):
            with self.subTest(job=name):
                _, recorded, found = self.verdicts(name)
                self.assertEqual(recorded["inventory"]["source"], "recorded")
                _, expressions, want = self.verdicts(name, "--source", "expressions")
                self.assertEqual(expressions["inventory"]["source"], "expressions")
                self.assertEqual(set(found), set(want))
                # Onsets agree within two of the rules' evaluation intervals (60 s here) and a
                # step: the records hold one value per evaluation, and promtool's second pass
                # evaluates the bitmask at other instants than the first pass's records (a live
                # Prometheus evaluates the group's rules at one instant).
                for key, f in want.items():
                    lag = (time.mktime(time.strptime(found[key]["since"], "%Y-%m-%dT%H:%M:%SZ")) -
                           time.mktime(time.strptime(f["since"], "%Y-%m-%dT%H:%M:%SZ")))
                    self.assertLessEqual(abs(lag), 2 * 60 + 15, key)
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        queried = 0
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                expr = (target["expr"].replace("$cluster", ".*").replace("$namespace", "ml")
                        .replace("$job", "straggler").replace("$node", ".*"))
                q = urllib.parse.urlencode({"query": expr, "time": self.end - 60})
                with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=10) as resp:
                    result = json.loads(resp.read())["data"]["result"]
                self.assertTrue(result, f"{panel['title']}: {expr}")
                queried += 1
        self.assertGreaterEqual(queried, 6)


if __name__ == "__main__":
    for tool in ("promtool", "prometheus"):
        if shutil.which(tool) is None:
            sys.exit(f"job_prometheus_test: needs {tool} (tools/deps.sh installs it)")
    unittest.main()
