"""The Grafana dashboards, as data: tools/deploy/render.py writes each one to
deploy/base/dashboards/<uid>.json (and the base ships them as ConfigMaps with the Grafana sidecar's
label). Every panel: a title, a description, a unit, and PromQL with the dashboard's matchers.

Variables: datasource (Prometheus), cluster (the `cluster` label, when your Prometheus adds one),
job (the scrape jobs tocsin-agent and tocsin-controller), node (the agents' target label `node`,
their Kubernetes node, which the shipped scrape configs set; a canary's node on the controller's
series). Rates use $__rate_interval. Job fabric is keyed by the training job instead: namespace,
job (a `job_name` of tocsin_pod_info) and node, over the recording rules of the group tocsin-job.
"""

M = 'cluster=~"$cluster", job=~"$job", node=~"$node"'


def panel(kind, title, description, unit, *targets, w=12, h=8):
    """targets: (expr, legend) pairs."""
    return {"type": kind, "title": title, "description": description, "unit": unit,
            "targets": list(targets), "w": w, "h": h}


FLEET_FABRIC = {
    "uid": "tocsin-fleet-fabric",
    "title": "tocsin / Fleet fabric",
    "description": "RDMA ports and their counters, the fabric against Ethernet per node, the "
                   "device plugin's coverage and the agents' NodeConditions.",
    "panels": [
        panel("stat", "RDMA ports not ACTIVE",
              "Ports whose state is not ACTIVE (TocsinRDMAPortDown after 15 seconds, two scrapes in a row).", "none",
              (f"count(tocsin_rdma_port_up{{{M}}} == 0) or vector(0)", "ports"), w=6, h=4),
        panel("stat", "Nodes training over TCP",
              "Nodes whose RDMA counters are flat while Ethernet is busy "
              "(node.fabric.idle-while-tcp-busy; TocsinSilentTCPFallback).", "none",
              (f'count(tocsin_check_status{{{M}, check="node.fabric.idle-while-tcp-busy"}} == 0)'
               " or vector(0)", "nodes"), w=6, h=4),
        panel("stat", "Device-plugin findings",
              "The controller's findings about the RDMA device plugin: DaemonSets not ready, "
              "fabric nodes without a ready plugin pod, nodes advertising no RDMA resource.",
              "none",
              (f'count(max by (check, subject) (tocsin_finding{{{M}, check=~"daemonset[.]not-ready|'
               f'daemonset[.]coverage|node[.]rdma[.]unadvertised"}}) == 1) or vector(0)',
               "findings"), w=6, h=4),
        panel("stat", "NodeConditions True",
              "The agents' NodeConditions that are True (RDMAFabricDegraded, "
              "SharedStorageDegraded, GPUNICAffinityBroken, TocsinChecksStale).", "none",
              (f'count(tocsin_node_condition{{{M}, status="True"}} == 1) or vector(0)',
               "conditions"), w=6, h=4),
        panel("timeseries", "RDMA port up",
              "1 when the port's state is ACTIVE, per node, device and port.", "none",
              (f"tocsin_rdma_port_up{{{M}}}", "{{node}} {{device}}/{{port}}")),
        panel("timeseries", "Port rate",
              "The rate each port trained at (sysfs `rate`): a port of a 400 Gb/s HCA at 200 Gb/s "
              "lost lanes.", "Bps",
              (f"tocsin_rdma_port_rate_bytes_per_second{{{M}}}", "{{node}} {{device}}/{{port}}")),
        panel("timeseries", "RDMA against Ethernet, per node",
              "The node's RDMA data rate beside its Ethernet rate: Ethernet busy while RDMA idles "
              "is a job on sockets.", "Bps",
              (f"tocsin_fabric_rdma_bytes_per_second{{{M}}}", "{{node}} RDMA"),
              (f"tocsin_fabric_ethernet_bytes_per_second{{{M}}}", "{{node}} Ethernet")),
        panel("timeseries", "RDMA port throughput",
              "Bytes sent and received per port (port_xmit_data and port_rcv_data).", "Bps",
              (f"sum by (node, device, port) (rate(tocsin_rdma_port_transmit_bytes_total{{{M}}}"
               f"[$__rate_interval]) + rate(tocsin_rdma_port_receive_bytes_total{{{M}}}"
               "[$__rate_interval]))", "{{node}} {{device}}/{{port}}")),
        panel("timeseries", "Link error counters",
              "Errors per interval by counter (symbol_error, link_downed, ...): a rising count "
              "is a degrading cable or transceiver.", "short",
              (f"sum by (node, device, port, counter) (increase(tocsin_rdma_port_errors_total"
               f"{{{M}}}[$__rate_interval])) > 0", "{{node}} {{device}}/{{port}} {{counter}}")),
        panel("timeseries", "NodeConditions",
              "1 while the condition is True, per node.", "none",
              (f'tocsin_node_condition{{{M}, status="True"}}', "{{node}} {{condition}}")),
    ],
}

SHARED_STORAGE = {
    "uid": "tocsin-shared-storage",
    "title": "tocsin / Shared storage",
    "description": "Lustre client imports, the agents' storage probe latency, and llite/osc "
                   "traffic per node.",
    "panels": [
        panel("stat", "Imports not FULL",
              "Lustre client imports (MDC/OSC) that are not FULL: the client lost a target.",
              "none", (f"count(tocsin_lustre_import_healthy{{{M}}} == 0) or vector(0)", "imports"),
              w=8, h=4),
        panel("stat", "Probe failures",
              "Storage probe paths whose last probe found something at warning or above.", "none",
              (f"count(tocsin_storage_probe_success{{{M}}} == 0) or vector(0)", "paths"), w=8, h=4),
        panel("stat", "Worst write+fsync p99",
              "The slowest node's write+fsync 99th percentile (TocsinSharedStorageSlow above 0.5 s).",
              "s",
              (f"max(histogram_quantile(0.99, sum by (node, path, le) (rate("
               f'tocsin_storage_probe_duration_seconds_bucket{{{M}, op="write_fsync"}}'
               "[$__rate_interval]))))", "p99"), w=8, h=4),
        panel("timeseries", "Import healthy",
              "1 while the import is FULL, per node and target.", "none",
              (f"tocsin_lustre_import_healthy{{{M}}}", "{{node}} {{target}}")),
        panel("timeseries", "Probe latency p50 and p99",
              "The agent's light probe (one 4 KiB write+fsync per interval) per node and path.",
              "s",
              (f"histogram_quantile(0.5, sum by (node, path, le) (rate("
               f'tocsin_storage_probe_duration_seconds_bucket{{{M}, op="write_fsync"}}'
               "[$__rate_interval])))", "{{node}} {{path}} p50"),
              (f"histogram_quantile(0.99, sum by (node, path, le) (rate("
               f'tocsin_storage_probe_duration_seconds_bucket{{{M}, op="write_fsync"}}'
               "[$__rate_interval])))", "{{node}} {{path}} p99")),
        panel("timeseries", "Import RPC wait",
              "Average RPC wait of each import (avg_waittime): a slow or distant server.", "s",
              (f"tocsin_lustre_import_avg_wait_seconds{{{M}}}", "{{node}} {{target}}")),
        panel("timeseries", "llite bytes",
              "Read and write bytes per second through the Lustre client (llite.*.stats).", "Bps",
              (f"sum by (node, op) (rate(tocsin_lustre_llite_bytes_total{{{M}}}"
               "[$__rate_interval]))", "{{node}} {{op}}")),
        panel("timeseries", "osc bytes",
              "Bytes per second per object storage client (one per OST).", "Bps",
              (f"sum by (node, device, op) (rate(tocsin_lustre_osc_bytes_total{{{M}}}"
               "[$__rate_interval]))", "{{node}} {{device}} {{op}}")),
        panel("timeseries", "RPC timeouts",
              "Import RPC timeouts per interval.", "short",
              (f"sum by (node, target) (increase(tocsin_lustre_import_rpc_timeouts_total{{{M}}}"
               "[$__rate_interval]))", "{{node}} {{target}}")),
    ],
}

CANARIES = {
    "uid": "tocsin-canaries",
    "title": "tocsin / Canaries",
    "description": "tocsin controller --canary: coverage of the fabric by passing canaries, runs "
                   "by outcome, the last pass per node and the failing canaries.",
    "panels": [
        panel("stat", "Coverage",
              "Share of fabric nodes (node) and topology block pairs (block_pair) that passed a "
              "canary within --canary-stale-after (TocsinCanaryCoverageLow below 80%).",
              "percentunit",
              (f"max by (scope) (tocsin_canary_coverage_ratio{{{M}}})", "{{scope}}"), w=8, h=4),
        panel("stat", "Canary pending",
              "How long the oldest rank of the round in flight has waited to run (0: none waits).",
              "s",
              (f"max(tocsin_canary_pending_seconds{{{M}}})", "pending"), w=8, h=4),
        panel("stat", "Failing canary findings",
              "canary.* findings (TocsinCanaryFailing, TocsinCanaryBandwidthLow, "
              "TocsinCanaryNodeStale).", "none",
              (f'count(max by (check, subject) (tocsin_finding{{{M}, check=~"canary[.].*"}}) == 1)'
               " or vector(0)", "findings"), w=8, h=4),
        panel("timeseries", "Runs by outcome",
              "Canary pairs judged per interval, by outcome.", "short",
              (f"sum by (outcome) (increase(tocsin_canary_runs_total{{{M}}}[$__rate_interval]))",
               "{{outcome}}")),
        panel("timeseries", "Fabric nodes by state",
              "Fabric nodes the planner knows (all) and those idle, Ready and schedulable at the "
              "last plan (idle).", "none",
              (f"max by (state) (tocsin_canary_fabric_nodes{{{M}}})", "{{state}}")),
        panel("table", "Hours since the last pass",
              "Per fabric node, the hours since its last passing canary.", "h",
              (f"(time() - max by (node) (tocsin_canary_last_pass_timestamp_seconds{{{M}}})) / 3600",
               "{{node}}"), w=24),
        panel("table", "Failing canaries",
              "Each canary finding with its check and subject (a node, pair/A/B, blocks/A/B or "
              "canary).", "none",
              (f'max by (check, subject, severity) (tocsin_finding{{{M}, check=~"canary[.].*"}}) == 1',
               "{{check}} {{subject}}"), w=24),
    ],
}

DRIFT = {
    "uid": "tocsin-drift",
    "title": "tocsin / Drift",
    "description": "tocsin controller --drift-baseline or --drift-context: where this cluster "
                   "differs from its baseline (a tocsin snapshot of staging, or staging itself), "
                   "by check and severity, and whether "
                   "the baseline and the live side could be read.",
    "panels": [
        panel("stat", "Drift errors",
              "Compared items that differ where jobs break: RDMA resource names or counts, the "
              "device plugin, network attachments, NCCL settings that disable the fabric "
              "(TocsinFabricDrift after a minute; node classes: TocsinNodeClassDrift after 15).",
              "none",
              (f'count(max by (check, subject) (tocsin_finding{{{M}, check=~"drift[.].*", '
               'severity=~"error|critical"}) == 1) or vector(0)', "errors"), w=6, h=4),
        panel("stat", "Drift warnings",
              "Compared items that differ at warning: plugin image, firmware, drivers, template "
              "NCCL variables, classes that are not homogeneous.", "none",
              (f'count(max by (check, subject) (tocsin_finding{{{M}, check=~"drift[.].*", '
               'severity="warning"}) == 1) or vector(0)', "warnings"), w=6, h=4),
        panel("stat", "Baseline readable",
              "1 when the last read of the baseline (--drift-baseline or --drift-context) and "
              "--drift-accept succeeded; 0: drift is judged against the copy read before (if "
              "any), and the drift checks are unknown.", "none",
              (f"min(tocsin_controller_drift_baseline_up{{{M}}})", "baseline"), w=6, h=4),
        panel("stat", "Minutes since the last run",
              "Drift is judged every --drift-interval (5m): more than two intervals is a stuck "
              "run.", "m",
              (f"(time() - max(tocsin_controller_drift_last_run_timestamp_seconds{{{M}}})) / 60",
               "minutes"), w=6, h=4),
        panel("timeseries", "Drift findings by check",
              "Items that differ from the baseline, by check id (accepted differences count, as "
              "info).", "none",
              (f'count by (check) (max by (check, subject) (tocsin_finding{{{M}, '
               'check=~"drift[.].*"}) == 1)', "{{check}}")),
        panel("timeseries", "Runs by outcome",
              "Drift runs per interval: ok, or incomplete (the baseline or a kind of the live "
              "side could not be read: drift.input.unreadable).", "short",
              (f"sum by (outcome) (increase(tocsin_controller_drift_runs_total{{{M}}}"
               "[$__rate_interval]))", "{{outcome}}")),
        panel("table", "Differences from the baseline",
              "Each drift finding with its check, severity and subject (the compared item: a "
              "class's fact, a pool, a network, a template variable).", "none",
              (f'max by (check, subject, severity) (tocsin_finding{{{M}, check=~"drift[.].*"}}) '
               "== 1", "{{check}} {{subject}}"), w=24),
        panel("timeseries", "Findings left out",
              "Drift findings over the cap (500) at the last run, the least severe first.",
              "none",
              (f"max(tocsin_controller_drift_findings_dropped{{{M}}})", "dropped"), w=24, h=6),
    ],
}

# The job's view (issue 20): keyed by the training job, not the scrape job. Its queries read the
# recording rules of the group tocsin-job (deploy/agent/alerts.yaml), whose labels are namespace,
# job_name and node; $job is a job_name.
J = 'namespace=~"$namespace", job_name=~"$job", node=~"$node"'

JOB_FABRIC = {
    "uid": "tocsin-job-fabric",
    "title": "tocsin / Job fabric",
    "description": "One training job's nodes: GPU utilisation beside the RDMA and Ethernet rates, "
                   "storage latency and NCCL transport, and its verdicts (job.fabric.fallback, "
                   "job.storage.stall, job.network.straggler). `tocsin job NAMESPACE/NAME` prints "
                   "the same.",
    "variables": [("namespace", "namespace", "label_values(tocsin:job_node:info, namespace)"),
                  ("job", "job", 'label_values(tocsin:job_node:info{namespace=~"$namespace"}, '
                                 "job_name)"),
                  ("node", "node", 'label_values(tocsin:job_node:info{namespace=~"$namespace", '
                                   'job_name=~"$job"}, node)')],
    "panels": [
        panel("stat", "Nodes", "Nodes that run a pod of the job (tocsin_pod_info).", "none",
              (f"count(tocsin:job_node:info{{{J}}}) or vector(0)", "nodes"), w=6, h=4),
        panel("stat", "GPU utilisation", "Mean utilisation of the job's GPUs over its nodes.",
              "percentunit",
              (f"avg(tocsin:job_node_gpu_utilization:avg{{{J}}})", "GPUs"), w=6, h=4),
        panel("stat", "Ranks on sockets",
              "NCCL processes of the job whose log says Socket (TocsinJobFabricFallback).",
              "none",
              (f"sum(tocsin:job_node_nccl_socket_processes:count{{{J}}}) or vector(0)",
               "processes"), w=6, h=4),
        panel("stat", "Verdicts firing",
              "The job's alerts now: TocsinJobFabricFallback, TocsinJobStorageStall, "
              "TocsinJobNetworkStraggler (one node each).", "none",
              (f'count(ALERTS{{alertstate="firing", {J}, alertname=~"TocsinJob.*"}}) or vector(0)',
               "alerts"), w=6, h=4),
        panel("timeseries", "GPU utilisation per node",
              "Mean utilisation of the GPUs the job holds on each node (tocsin_pod_device_info "
              "joined to tocsin_gpu_utilization_ratio).", "percentunit",
              (f"tocsin:job_node_gpu_utilization:avg{{{J}}}", "{{node}}")),
        panel("timeseries", "RDMA against Ethernet per node",
              "Each node's RDMA rate beside its Ethernet rate: Ethernet busy while RDMA idles is "
              "a fallback to sockets; one node far below its peers is a straggler.", "Bps",
              (f"tocsin:job_node_rdma_bytes_per_second{{{J}}}", "{{node}} RDMA"),
              (f"tocsin:job_node_ethernet_bytes_per_second{{{J}}}", "{{node}} Ethernet")),
        panel("timeseries", "Storage latency per node",
              "The storage probe's write+fsync p99 and the worst Lustre import's RPC wait on the "
              "job's nodes: high while the GPUs drop is a storage stall.", "s",
              (f"tocsin:job_node_storage_probe_p99_seconds{{{J}}}", "{{node}} probe p99"),
              (f"tocsin:job_node_lustre_wait_seconds:max{{{J}}}", "{{node}} Lustre wait")),
        panel("timeseries", "Fabric rate against the job's median",
              "Each node's RDMA and Ethernet bytes together divided by the median of the job's "
              "nodes: below 0.5 for 5 minutes is TocsinJobNetworkStraggler.", "percentunit",
              (f"(tocsin:job_node_rdma_bytes_per_second{{{J}}} + "
               f"tocsin:job_node_ethernet_bytes_per_second{{{J}}}) / on (namespace, job_name) "
               f"group_left quantile by (namespace, job_name) (0.5, "
               f"tocsin:job_node_rdma_bytes_per_second{{{J}}} + "
               f"tocsin:job_node_ethernet_bytes_per_second{{{J}}})", "{{node}}")),
        panel("table", "NCCL transport per process",
              "Each NCCL process of the job (up to 12 per node) and the transport its inter-node "
              "channels use.", "none",
              (f"tocsin:job_process_nccl_transport:info{{{J}}}",
               "{{node}} {{pod}} {{pid}} {{transport}}"), w=24),
    ],
}

DASHBOARDS = [FLEET_FABRIC, SHARED_STORAGE, CANARIES, DRIFT, JOB_FABRIC]


SCRAPE_VARIABLES = [
    ("cluster", "cluster", 'label_values(up{job=~"tocsin-.*"}, cluster)'),
    ("job", "job", 'label_values(up{job=~"tocsin-.*", cluster=~"$cluster"}, job)'),
    ("node", "node", 'label_values(up{job=~"$job", cluster=~"$cluster"}, node)'),
]


def variable(name, label, query):
    return {"name": name, "label": label, "type": "query", "hide": 0,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "definition": query, "query": {"query": query, "refId": name},
            "refresh": 2, "includeAll": True, "allValue": ".*", "multi": True, "sort": 1,
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "options": []}


def grafana_json(d):
    """The dashboard in Grafana's JSON model (schemaVersion 39)."""
    panels, x, y, row_h = [], 0, 0, 0
    for i, p in enumerate(d["panels"], start=1):
        if x + p["w"] > 24:
            x, y, row_h = 0, y + row_h, 0
        targets = [{"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend,
                    "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                   for j, (expr, legend) in enumerate(p["targets"])]
        panels.append({
            "id": i, "type": p["type"], "title": p["title"], "description": p["description"],
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": p["h"], "w": p["w"], "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": p["unit"]}, "overrides": []},
            "options": {}, "targets": targets})
        x += p["w"]
        row_h = max(row_h, p["h"])
    return {
        "uid": d["uid"], "title": d["title"], "description": d["description"],
        "tags": ["tocsin"], "editable": False, "graphTooltip": 1, "schemaVersion": 39,
        "version": 1, "time": {"from": "now-6h", "to": "now"}, "refresh": "1m",
        "timezone": "", "links": [], "annotations": {"list": []},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "hide": 0, "current": {}, "options": [], "refresh": 1},
        ] + [variable(*v) for v in d.get("variables", SCRAPE_VARIABLES)]},
        "panels": panels,
    }
