#!/usr/bin/env python3
"""The job's view (issue 20) as series: training jobs whose nodes fall back to sockets, stall on
storage, straggle or run well, written as what the agent exports (docs/METRICS.md) plus the
attribution series of issue 20 part 1 (tocsin_pod_info, tocsin_pod_device_info).

  python3 tools/make_job_fixtures.py          writes deploy/agent/job_alerts_test.yaml: one
                                              promtool test per SCENARIOS entry, each expecting
                                              exactly its alerts (and none before the fault)
  python3 tools/make_job_fixtures.py --check  exit 1 when that file is not what this writes
  python3 tools/make_job_fixtures.py --openmetrics FILE --end UNIX
                                              writes E2E (four 4-node jobs in one cluster, 90
                                              minutes at 15 s ending at UNIX) as OpenMetrics for
                                              `promtool tsdb create-blocks-from openmetrics`
  python3 tools/make_job_fixtures.py --openmetrics FILE --end UNIX --scale-nodes 512 [--hours 24]
                                              [--interval 60]: one job of 512 nodes instead
                                              (bench/job_view.py)

Deterministic: the same arguments give the same bytes.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMTOOL_OUT = os.path.join(ROOT, "deploy", "agent", "job_alerts_test.yaml")
GPUS = ["0000:1b:00.0", "0000:2b:00.0"]  # two per node: enough for every join
BUCKETS = ["0.1", "0.5", "1", "2.5", "10", "+Inf"]

# Healthy values: GPUs busy, RDMA carrying the collectives, Ethernet quiet, storage fast.
GPU, RDMA, ETH, LUSTRE = 0.92, 1.2e10, 2e7, 0.002


class Node:
    """One node's series over time. Each value is a constant or (healthy, faulted): the second
    holds inside the scenario's fault window."""

    def __init__(self, gpu=GPU, rdma=RDMA, eth=ETH, slow_probe=False, lustre=LUSTRE):
        self.gpu = gpu if isinstance(gpu, list) else [gpu, gpu]  # per GPU of GPUS
        self.rdma, self.eth, self.slow_probe, self.lustre = rdma, eth, slow_probe, lustre


class Pod:
    def __init__(self, job, node, gpus=(0, 1), transports=("IB", "IB"), namespace="ml"):
        self.namespace, self.job, self.node = namespace, job, node
        self.name = f"{job}-{node}-{gpus[0] if gpus else 'x'}"
        self.gpus, self.transports = list(gpus), list(transports)


def at(value, faulted):
    if isinstance(value, tuple):
        return value[1] if faulted else value[0]
    return value


def job_pods(job, nodes, **kw):
    return [Pod(job, n, **kw) for n in nodes]


def names(n, prefix="node"):
    return [f"{prefix}-{i}" for i in range(1, n + 1)]


def healthy(n, prefix="node"):
    return {name: Node() for name in names(n, prefix)}


def with_nodes(base, **changes):
    out = dict(base)
    out.update(changes)
    return out


FB, ST, NS = "TocsinJobFabricFallback", "TocsinJobStorageStall", "TocsinJobNetworkStraggler"

# name: (what it shows, nodes, pods, expected {alert: [(namespace, job, node)]})
SCENARIOS = [
    ("fallback-nccl-log", "one rank's NCCL log says Socket; its node's counters look fine",
     healthy(4), job_pods("llm", names(4)[:1] + names(4)[2:]) +
     [Pod("llm", "node-2", transports=("IB", "Socket"))], {FB: [("ml", "llm", "node-2")]}),
    ("fallback-counters", "no NCCL log; the node's GPUs wait, Ethernet busy, RDMA idle",
     with_nodes(healthy(4), **{"node-3": Node(gpu=(GPU, 0.2), rdma=(RDMA, 0), eth=(ETH, 6e8))}),
     job_pods("llm", names(4), transports=()), {FB: [("ml", "llm", "node-3")]}),
    ("fallback-whole-job", "every rank on sockets: the job's fallback, not four stragglers",
     {n: Node(gpu=(GPU, 0.3), rdma=(RDMA, 0), eth=(ETH, 9e8)) for n in names(4)},
     job_pods("llm", names(4), transports=("Socket", "Socket")),
     {FB: [("ml", "llm", n) for n in names(4)]}),
    ("fallback-shared-node", "two jobs share node-1: only the one whose rank is on sockets",
     healthy(7), job_pods("llm", names(4), gpus=(0,)) +
     [Pod("vit", "node-1", gpus=(1,), transports=("Socket",))] +
     job_pods("vit", names(7)[4:], gpus=(1,)), {FB: [("ml", "vit", "node-1")]}),
    ("stall-checkpoint", "a checkpoint: every node's GPUs drop while the probe's p99 is 2 s",
     {n: Node(gpu=(GPU, 0.1), rdma=(RDMA, 1e7), slow_probe=(False, True)) for n in names(4)},
     job_pods("llm", names(4)), {ST: [("ml", "llm", n) for n in names(4)]}),
    ("stall-lustre-wait", "one node's Lustre imports wait 0.5 s per RPC and its GPUs drop",
     with_nodes(healthy(4), **{"node-2": Node(gpu=(GPU, 0.3), lustre=(LUSTRE, 0.5))}),
     job_pods("llm", names(4)), {ST: [("ml", "llm", "node-2")]}),
    ("stall-checkpoint-over-tcp", "a checkpoint to Lustre over TCP: Ethernet busy and RDMA idle "
     "while the GPUs wait is storage, not a fallback",
     {n: Node(gpu=(GPU, 0.1), rdma=(RDMA, 0), eth=(ETH, 2e9), slow_probe=(False, True))
      for n in names(4)},
     job_pods("llm", names(4)), {ST: [("ml", "llm", n) for n in names(4)]}),
    ("stall-by-gpu", "node-1 holds a GPU of each job: only the job whose GPU waits stalls",
     with_nodes(healthy(5), **{"node-1": Node(gpu=[(GPU, 0.1), GPU], slow_probe=(False, True))}),
     job_pods("llm", names(3), gpus=(0,)) + job_pods("vit", ["node-1", "node-4", "node-5"],
                                                      gpus=(1,)),
     {ST: [("ml", "llm", "node-1")]}),
    ("straggler-one-of-four", "node-4 moves a quarter of its peers' bytes",
     with_nodes(healthy(4), **{"node-4": Node(rdma=(RDMA, 3e9))}),
     job_pods("llm", names(4)), {NS: [("ml", "llm", "node-4")]}),
    ("straggler-one-of-eight", "one slow node among eight",
     with_nodes(healthy(8), **{"node-6": Node(rdma=(RDMA, 2e9))}),
     job_pods("llm", names(8)), {NS: [("ml", "llm", "node-6")]}),
    ("straggler-three-nodes", "the smallest job with a median: three nodes",
     with_nodes(healthy(3), **{"node-1": Node(rdma=(RDMA, 4e9))}),
     job_pods("llm", names(3)), {NS: [("ml", "llm", "node-1")]}),
    ("straggler-not-the-sixty-percent", "of six nodes one at 60% (kept) and one at 20%",
     with_nodes(healthy(6), **{"node-2": Node(rdma=(RDMA, 0.6 * RDMA)),
                               "node-5": Node(rdma=(RDMA, 0.2 * RDMA))}),
     job_pods("llm", names(6)), {NS: [("ml", "llm", "node-5")]}),
    ("cardinality", "16 NCCL processes on a node, 2 on sockets: 19 job series there, not 25",
     healthy(3), job_pods("llm", names(3)[1:]) +
     [Pod("llm", "node-1", transports=("IB",) * 14 + ("Socket",) * 2)],
     {FB: [("ml", "llm", "node-1")]}),
    ("healthy", "a job running well", healthy(4), job_pods("llm", names(4)), {}),
    ("data-loader-bound", "GPUs at 30% everywhere with the fabric and storage fine: no verdict",
     {n: Node(gpu=(GPU, 0.3)) for n in names(4)}, job_pods("llm", names(4)), {}),
    ("two-node-job", "one of two nodes slow: no median to compare with",
     with_nodes(healthy(2), **{"node-2": Node(rdma=(RDMA, 2e9))}), job_pods("llm", names(2)),
     {}),
    ("idle-job", "a job that moves nothing (loading, evaluating): no straggler",
     {n: Node(gpu=0.95, rdma=(1e6, 2e3), eth=1e4) for n in names(4)}, job_pods("llm", names(4)),
     {}),
    ("async-checkpoint", "storage slow while the GPUs stay busy: nothing waits",
     {n: Node(slow_probe=(False, True)) for n in names(4)}, job_pods("llm", names(4)), {}),
    ("unattributed-node", "a slow node that runs no pod of the job is not the job's",
     with_nodes(healthy(5), **{"node-5": Node(gpu=0.1, rdma=0, eth=9e8, slow_probe=True)}),
     job_pods("llm", names(4)) + [Pod("llm", "node-5", gpus=(), transports=(), namespace="other")],
     {}),
]

SUMMARIES = {
    FB: ("job {namespace}/{job_name} runs over sockets on {node}",
         "A rank's NCCL log says Socket, or the node's GPUs wait while its Ethernet is busy and "
         "its RDMA ports idle: `tocsin job {namespace}/{job_name}` shows it beside the job's "
         "other nodes."),
    ST: ("job {namespace}/{job_name} waits on storage on {node}",
         "The node's GPUs are under-used while its shared storage is slow (a checkpoint that "
         "stalls): `tocsin job {namespace}/{job_name}` shows when it began."),
    NS: ("{node} moves less than half of its peers' bytes in job {namespace}/{job_name}",
         "The node's RDMA and Ethernet rate together is under half the median of the job's nodes "
         "(3 or more, the median above 100 MB/s): a degraded link or NIC holds the whole job "
         "back. `tocsin job {namespace}/{job_name}` compares the nodes."),
}
CHECKS = {FB: ("critical", "job.fabric.fallback"), ST: ("warning", "job.storage.stall"),
          NS: ("warning", "job.network.straggler")}


def num(v):
    return "%.6g" % v


def series(nodes, pods, times, faulted):
    """{(name, labels): [value per time]} of everything the agents export, and the attribution.
    times: sample times in seconds from the start; faulted(t) says whether t is in the fault."""
    out = {}

    def put(name, labels, values):
        key = (name, tuple(sorted(labels.items())))
        out[key] = values

    agent = lambda node: {"job": "tocsin-agent", "instance": f"{node}:9464", "node": node}
    for node, spec in sorted(nodes.items()):
        for i, gpu in enumerate(GPUS):
            put("tocsin_gpu_utilization_ratio", {**agent(node), "gpu": gpu},
                [at(spec.gpu[i], faulted(t)) for t in times])
        put("tocsin_fabric_rdma_bytes_per_second", agent(node),
            [at(spec.rdma, faulted(t)) for t in times])
        put("tocsin_fabric_ethernet_bytes_per_second", agent(node),
            [at(spec.eth, faulted(t)) for t in times])
        put("tocsin_lustre_import_avg_wait_seconds",
            {**agent(node), "device": "lustre-OST0000-osc-ffff", "target": "lustre-OST0000"},
            [at(spec.lustre, faulted(t)) for t in times])
        # The probe: two 4 KiB write+fsync a minute, 10 ms each when healthy, 2 s when slow.
        counts = {b: [] for b in BUCKETS}
        fast = slow = 0.0
        prev = None
        for t in times:
            if prev is not None:
                n = 2.0 * (t - prev) / 60
                if at(spec.slow_probe, faulted(t)):
                    slow += n
                else:
                    fast += n
            prev = t
            for b in BUCKETS:
                counts[b].append(fast + (slow if b in ("2.5", "10", "+Inf") else 0))
        for b in BUCKETS:
            put("tocsin_storage_probe_duration_seconds_bucket",
                {**agent(node), "path": "/mnt/lustre", "op": "write_fsync", "le": b}, counts[b])
    for pod in pods:
        put("tocsin_pod_info", {**agent(pod.node), "namespace": pod.namespace, "pod": pod.name,
                                "job_name": pod.job}, [1] * len(times))
        for g in pod.gpus:
            put("tocsin_pod_device_info", {**agent(pod.node), "namespace": pod.namespace,
                                           "pod": pod.name, "device_kind": "gpu",
                                           "device": GPUS[g]}, [1] * len(times))
        for i, transport in enumerate(pod.transports):
            # A rank on sockets is one that (re)started so when the fault began: before it, none.
            on = [1 if transport != "Socket" or faulted(t) else None for t in times]
            put("tocsin_nccl_process_info",
                {**agent(pod.node), "namespace": pod.namespace, "pod": pod.name,
                 "container": "trainer", "host": pod.node, "pid": str(100 + i),
                 "transport": transport, "network": "IB" if transport == "IB" else "Socket"},
                on)
    return out


def selector(name, labels):
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


def runs(values):
    """promtool's expanding notation: 'a+bxn' is n+1 values."""
    parts, i = [], 0
    while i < len(values):
        v, j = values[i], i
        if v is None:
            while j + 1 < len(values) and values[j + 1] is None:
                j += 1
            parts.append("_" if j == i else f"_x{j - i}")
        elif j + 1 < len(values) and values[j + 1] is not None and values[j + 1] != v:
            step = values[j + 1] - v
            while (j + 1 < len(values) and values[j + 1] is not None
                   and abs(values[j + 1] - values[j] - step) < 1e-9):
                j += 1
            parts.append(f"{num(v)}{'+' if step >= 0 else '-'}{num(abs(step))}x{j - i}")
        else:
            while j + 1 < len(values) and values[j + 1] == v:
                j += 1
            parts.append(num(v) if j == i else f"{num(v)}x{j - i}")
        i = j + 1
    return " ".join(parts)


def quote(s):
    return "'" + s.replace("'", "''") + "'"


def promtool_tests():
    minutes, fault = 30, (10, 31)
    times = [60 * m for m in range(minutes + 1)]
    faulted = lambda t: fault[0] * 60 <= t < fault[1] * 60
    out = ["# Generated by tools/make_job_fixtures.py: do not edit. The job alerts of alerts.yaml\n"
           "# (group tocsin-job), one test per scenario: each yields exactly its alerts 20 minutes\n"
           "# into its fault, and none before it. promtool test rules (run by make test).\n",
           "rule_files: [alerts.yaml]\nevaluation_interval: 1m\ntests:\n"]
    for name, what, nodes, pods, expect in SCENARIOS:
        out.append(f"  # {name}: {what}\n  - interval: 1m\n    input_series:\n")
        for (metric, labels), values in sorted(series(nodes, pods, times, faulted).items()):
            out.append(f"      - series: {quote(selector(metric, labels))}\n"
                       f"        values: '{runs(values)}'\n")
        # The bitmask record at the same time: exactly the bits of the alerts that fire there
        # (every condition of these scenarios holds from the fault's start on), and 8 where an
        # input is missing.
        out.append("    promql_expr_test:\n"
                   "      - expr: tocsin:job_node_verdicts:bitmask\n        eval_time: 30m\n"
                   "        exp_samples:\n")
        for ns, job, node in sorted({(p.namespace, p.job, p.node) for p in pods}):
            bits = sum(bit for bit, alert in ((1, FB), (2, ST), (4, NS))
                       if (ns, job, node) in expect.get(alert, []))
            # 8: an input every verdict needs is missing (here: the job holds no GPU there).
            if not any(p.gpus for p in pods if (p.namespace, p.job, p.node) == (ns, job, node)):
                bits += 8
            out.append(f"          - labels: '{{__name__=\"tocsin:job_node_verdicts:bitmask\", "
                       f"job_name=\"{job}\", namespace=\"{ns}\", node=\"{node}\"}}'\n"
                       f"            value: {bits}\n")
        if name == "cardinality":
            out.append("      - expr: count by (namespace, job_name, node) "
                       "({__name__=~\"tocsin:job_.+\"})\n        eval_time: 30m\n"
                       "        exp_samples:\n")
            for node, n in (("node-1", 20), ("node-2", 9), ("node-3", 9)):
                out.append(f"          - labels: '{{job_name=\"llm\", namespace=\"ml\", "
                           f"node=\"{node}\"}}'\n            value: {n}\n")
        out.append("    alert_rule_test:\n")
        for alert in (FB, ST, NS):
            out.append(f"      - eval_time: 9m\n        alertname: {alert}\n        exp_alerts: []\n")
            fired = sorted(expect.get(alert, []))
            out.append(f"      - eval_time: 30m\n        alertname: {alert}\n")
            if not fired:
                out.append("        exp_alerts: []\n")
                continue
            out.append("        exp_alerts:\n")
            severity, check = CHECKS[alert]
            for ns, job, node in fired:
                summary, description = (s.format(namespace=ns, job_name=job, node=node)
                                        for s in SUMMARIES[alert])
                out.append(f"          - exp_labels: {{severity: {severity}, check: {check}, "
                           f"namespace: {ns}, job_name: {job}, node: {node}}}\n"
                           f"            exp_annotations:\n"
                           f"              summary: {quote(summary)}\n"
                           f"              description: {quote(description)}\n")
    return "".join(out)


# The end-to-end cluster: four jobs on sixteen nodes, 90 minutes; the faults as (start, end) in
# minutes from the start: a rank on sockets from minute 40 on, a checkpoint stall from 50 to 65
# (over before the end), a straggler from minute 45 on, a healthy job.
E2E = [
    # As a ring with one rank on sockets runs: the whole job slows to the socket's pace (every
    # node's GPUs wait, RDMA at half), fb-2's Ethernet carries its socket rank's share.
    ("fallback", (40, 91),
     with_nodes({f"fb-{i}": Node(gpu=(GPU, 0.41), rdma=(RDMA, 6e9)) for i in range(1, 5)},
                **{"fb-2": Node(gpu=(GPU, 0.38), rdma=(RDMA, 3.1e9), eth=(ETH, 1.1e9))}),
     job_pods("fallback", ["fb-1", "fb-3", "fb-4"]) +
     [Pod("fallback", "fb-2", transports=("IB", "Socket"))]),
    ("ckpt", (50, 65), {f"ck-{i}": Node(gpu=(GPU, 0.1), rdma=(RDMA, 1e7), slow_probe=(False, True))
                        for i in range(1, 5)},
     job_pods("ckpt", [f"ck-{i}" for i in range(1, 5)])),
    ("straggler", (45, 91), with_nodes({f"sg-{i}": Node() for i in range(1, 5)},
                                       **{"sg-3": Node(rdma=(RDMA, 2.5e9))}),
     job_pods("straggler", [f"sg-{i}" for i in range(1, 5)])),
    ("healthy", (0, 0), {f"ok-{i}": Node() for i in range(1, 5)},
     job_pods("healthy", [f"ok-{i}" for i in range(1, 5)])),
]


def openmetrics(end, jobs=None, minutes=90, interval=15):
    """`jobs` (default E2E) as OpenMetrics text: `minutes` of samples every `interval` seconds
    ending at `end`."""
    start = end - minutes * 60
    times = list(range(0, minutes * 60 + 1, interval))
    families = {}
    for _, fault, nodes, pods in E2E if jobs is None else jobs:
        faulted = lambda t, f=fault: f[0] * 60 <= t < f[1] * 60
        for (metric, labels), values in series(nodes, pods, times, faulted).items():
            families.setdefault(metric, []).append((labels, values))
    out = []
    for metric in sorted(families):
        out.append(f"# TYPE {metric} {'unknown' if metric.endswith('_bucket') else 'gauge'}\n")
        for labels, values in sorted(families[metric]):
            sel = selector(metric, labels)
            out.extend(f"{sel} {num(v)} {start + t}\n" for t, v in zip(times, values)
                       if v is not None)
    out.append("# EOF\n")
    return "".join(out)


def scaled(nodes):
    """bench/job_view.py's job: `nodes` nodes of job ml/llm, one of them a straggler for the last
    quarter of the window (minutes are filled in by the caller's window)."""
    names_ = names(nodes)
    specs = {n: Node() for n in names_}
    specs[names_[-1]] = Node(rdma=(RDMA, 2e9))
    return [("llm", None, specs, job_pods("llm", names_))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--openmetrics")
    ap.add_argument("--end", type=int)
    ap.add_argument("--scale-nodes", type=int,
                    help="with --openmetrics: instead of E2E, one job of this many nodes (one "
                         "straggling in the last quarter) over --hours at --interval")
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--interval", type=int, default=60)
    a = ap.parse_args()
    if a.openmetrics:
        if a.end is None:
            ap.error("--openmetrics needs --end")
        with open(a.openmetrics, "w") as f:
            if a.scale_nodes:
                minutes = a.hours * 60
                [(name, _, specs, pods)] = scaled(a.scale_nodes)
                jobs = [(name, (minutes * 3 // 4, minutes + 1), specs, pods)]
                f.write(openmetrics(a.end, jobs, minutes, a.interval))
            else:
                f.write(openmetrics(a.end))
        return 0
    text = promtool_tests()
    if a.check:
        with open(PROMTOOL_OUT) as f:
            if f.read() != text:
                print("make_job_fixtures: deploy/agent/job_alerts_test.yaml is stale "
                      "(run tools/make_job_fixtures.py)", file=sys.stderr)
                return 1
        return 0
    with open(PROMTOOL_OUT, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
