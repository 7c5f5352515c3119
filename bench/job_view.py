#!/usr/bin/env python3
"""`tocsin job` on a large job (issue 20: "answers in under 1 s for a 512-node job over 24 hours
of data"), beside its yardstick in the same run.

tools/make_job_fixtures.py --scale-nodes writes one job (ml/llm) of --nodes nodes as the agents
export it (GPU utilisation per GPU, RDMA and Ethernet rates, storage probe histogram, Lustre wait,
NCCL transport per process, the pods' attribution series: 16 series per node) over --hours at
--interval seconds, its last node straggling in the last quarter; `promtool tsdb
create-blocks-from openmetrics` backfills it, `create-blocks-from rules` adds the tocsin-job
records over the same window (what a Prometheus evaluating the shipped rules holds), and
Prometheus serves it (its query log on). Then, alternating for --rounds rounds:
  - `tocsin job ml/llm --since 24h -o json` (wall time and peak RSS of the process);
  - the yardstick: the same requests (read from Prometheus's query log) sent one
    after another from this script: what Prometheus alone takes to answer them.
Then once `--source expressions` (the records re-evaluated from the agents' series: the cost
without recorded history). Prints medians; exit 1 if tocsin's median is over --goal seconds, the
records were not read, or the verdict is not exactly job.network.straggler on the last node.

  bench/job_view.py [--nodes 512] [--hours 24] [--interval 60] [--rounds 5] [--keep DIR]
Needs `make build` (or --tocsin), prometheus and promtool (tools/deps.sh). Bounded: every wait
has a deadline; the files go to a temporary folder removed at the end.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from controller_alert_e2e import free_port  # noqa: E402


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def timed_child(argv, timeout):
    """(seconds, peak RSS in MiB, stdout) of one child process, its own rusage (wait4)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.monotonic()
        p = subprocess.Popen(argv, stdout=out, stderr=err)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            killer.cancel()
        secs = time.monotonic() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: "
                               f"{err.read().decode()[-2000:]}")
        return secs, usage.ru_maxrss / 1024, out.read().decode()


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    release = os.path.join(ROOT, "build", "release", "tocsin")
    a.add_argument("--tocsin", default=release if os.path.exists(release)
                   else os.path.join(ROOT, "build", "test", "tocsin"))
    a.add_argument("--nodes", type=int, default=512)
    a.add_argument("--hours", type=int, default=24)
    a.add_argument("--interval", type=int, default=60, help="seconds between samples")
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--goal", type=float, default=1.0, help="seconds")
    a.add_argument("--keep", metavar="DIR",
                   help="keep the backfilled data in DIR and reuse it when DIR holds it")
    args = a.parse_args()
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            sys.exit(f"job_view: needs {tool} (tools/deps.sh)")
    keep = args.keep and os.path.isfile(os.path.join(args.keep, "end"))
    tmp = args.keep or tempfile.mkdtemp(prefix="tocsin-jobview-")
    os.makedirs(tmp, exist_ok=True)
    prom = None
    try:
        tsdb = os.path.join(tmp, "tsdb")
        if keep:
            with open(os.path.join(tmp, "end")) as f:
                end = int(f.read())
            print(f"fixture: reusing {tsdb} (end {rfc3339(end)})")
        else:
            shutil.rmtree(tsdb, ignore_errors=True)
            for n in range(2):
                if os.path.exists(os.path.join(tmp, f"rules-pass-{n}")):
                    os.remove(os.path.join(tmp, f"rules-pass-{n}"))
            end = int(time.time()) // 60 * 60 - 60
            om = os.path.join(tmp, "job.om")
            t = time.monotonic()
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_job_fixtures.py"),
                            "--openmetrics", om, "--end", str(end), "--scale-nodes",
                            str(args.nodes), "--hours", str(args.hours), "--interval",
                            str(args.interval)], check=True, timeout=1800)
            size = os.path.getsize(om)
            print(f"fixture: {args.nodes} nodes, {args.hours} h at {args.interval} s: "
                  f"{size / 2**20:.0f} MiB of OpenMetrics in {time.monotonic() - t:.0f} s")
            t = time.monotonic()
            subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, tsdb],
                           check=True, timeout=3600, capture_output=True)
            os.remove(om)
            print(f"backfilled in {time.monotonic() - t:.0f} s")

        def start_prometheus():
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
                f.write(f"global: {{evaluation_interval: 15s, query_log_file: {qlog}}}\n")
            log = open(os.path.join(tmp, "prometheus.log"), "ab")
            p = subprocess.Popen(
                ["prometheus", f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tsdb}",
                 f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=3d"],
                stdout=log, stderr=log)
            deadline = time.monotonic() + 300
            while True:
                try:
                    with urllib.request.urlopen(url + "/-/ready", timeout=2) as r:
                        if r.status == 200:
                            return p, url
                except OSError:
                    pass
                if p.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("prometheus did not become ready")
                time.sleep(0.2)

        def stop(p):
            p.terminate()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

        qlog = os.path.join(tmp, "queries.log")
        if not keep:
            with open(os.path.join(tmp, "end"), "w") as f:
                f.write(str(end))
        # The records, as a Prometheus evaluating the shipped rules holds them: the tocsin-job
        # group backfilled over the window (promtool evaluates each rule on its own through this
        # Prometheus), in two passes: the bitmask reads the other records, which only the first
        # pass's blocks hold.
        with open(os.path.join(ROOT, "deploy", "agent", "alerts.yaml")) as f:
            group = [g for g in yaml.safe_load(f)["groups"] if g["name"] == "tocsin-job"][0]
        records = [r for r in group["rules"] if "record" in r]
        for n, batch in enumerate((records[:-1], records[-1:])):
            marker = os.path.join(tmp, f"rules-pass-{n}")
            if os.path.exists(marker):
                continue
            prom, url = start_prometheus()
            rules = os.path.join(tmp, f"job-rules-{n}.yaml")
            with open(rules, "w") as f:
                yaml.safe_dump({"groups": [{"name": "tocsin-job", "rules": batch}]}, f)
            blocks = os.path.join(tmp, f"rule-blocks-{n}")
            shutil.rmtree(blocks, ignore_errors=True)
            t = time.monotonic()
            subprocess.run(["promtool", "tsdb", "create-blocks-from", "rules",
                            f"--start={end - args.hours * 3600}", f"--end={end}",
                            f"--eval-interval={args.interval}s", f"--url={url}",
                            f"--output-dir={blocks}", rules],
                           check=True, timeout=7200, capture_output=True)
            print(f"recording rules (pass {n + 1}) backfilled in {time.monotonic() - t:.0f} s")
            stop(prom)
            prom = None
            for block in os.listdir(blocks):
                shutil.move(os.path.join(blocks, block), os.path.join(tsdb, block))
            open(marker, "w").close()
        if os.path.exists(qlog):
            os.remove(qlog)  # promtool's queries: only tocsin job's are replayed
        prom, url = start_prometheus()
        argv = [args.tocsin, "job", "ml/llm", "--prometheus", url, "--since", f"{args.hours}h",
                "--until", rfc3339(end), "--fail-on", "warning", "-o", "json"]
        # Warm-up (Prometheus's page cache and head): also the run whose queries are replayed.
        _, rss, out = timed_child(argv, 120)
        report = json.loads(out)
        got = sorted((f["check"], f["subject"]) for f in report["findings"])
        want = [("job.network.straggler", f"node-{args.nodes}")]
        with open(qlog) as f:
            paths = []
            for line in f:
                q = json.loads(line)
                params = q.get("params", {})
                step = int(float(params.get("step", 0)))
                if step == 0:  # an instant query: its time is the log's start and end
                    paths.append("/api/v1/query?" + urllib.parse.urlencode({
                        "query": params["query"], "time": params["start"]}))
                    continue
                paths.append("/api/v1/query_range?" + urllib.parse.urlencode({
                    "query": params["query"], "start": params["start"], "end": params["end"],
                    "step": step}))

        def replay():
            t = time.monotonic()
            for p in paths:
                with urllib.request.urlopen(url + p, timeout=120) as r:
                    r.read()
            return time.monotonic() - t

        ours, theirs = [], []
        for _ in range(args.rounds):
            secs, _, _ = timed_child(argv, 120)
            ours.append(secs)
            theirs.append(replay())
        source = json.loads(timed_child(argv, 120)[2])["inventory"]["source"]
        # Before: the rules' expressions over the agents' series (no records read).
        try:
            exp_secs, _, exp_out = timed_child(argv + ["--source", "expressions", "--timeout",
                                                      "600s"], 1800)
            exp_got = sorted((f["check"], f["subject"]) for f in json.loads(exp_out)["findings"])
        except RuntimeError as e:
            exp_secs, exp_got = None, str(e)
        load = os.getloadavg()[0]
        med, ymed = statistics.median(ours), statistics.median(theirs)
        print(f"tocsin job ml/llm --since {args.hours}h ({args.nodes} nodes, {len(paths)} "
              f"requests): median {med:.3f} s over {args.rounds} rounds "
              f"(min {min(ours):.3f}, max {max(ours):.3f}); peak RSS {rss:.1f} MiB")
        print(f"yardstick, the same requests from Python one after another: median {ymed:.3f} s "
              f"(tocsin / yardstick {med / ymed:.2f}x); load average {load:.1f}")
        print(f"verdicts: {got} (series read: {source})")
        print("the same with --source expressions (the rules' expressions over the agents' "
              f"series): " + (f"{exp_secs:.3f} s, verdicts {exp_got}" if exp_secs is not None
                              else f"failed: {exp_got}"))
        ok = med <= args.goal and got == want and source == "recorded"
        if got != want:
            print(f"job_view: expected exactly {want}", file=sys.stderr)
        if med > args.goal:
            print(f"job_view: over the goal of {args.goal} s", file=sys.stderr)
        return 0 if ok else 1
    finally:
        if prom is not None:
            prom.terminate()
            try:
                prom.wait(timeout=60)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
