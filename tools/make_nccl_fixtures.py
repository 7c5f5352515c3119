#!/usr/bin/env python3
"""Writes the NCCL log fixtures under src/nccl/testdata/.

Every line is assembled from a format string of NCCL's or nccl-tests' source, as described with
those sources in docs/FORMATS.md (NCCL INFO/WARN lines, 2.7-2.30; nccl-tests output): these are
"constructed" examples, not copies of real logs. Where a format changed across
versions the generator follows the version of the fixture:

* prefix "%s:%d:%d [%d] NCCL INFO %s"; WARN adds "file:line" before "NCCL WARN";
* 2.12 channels "Channel %02d/%d : %d[%lx] -> %d[%lx]" (bus id in brackets), 2.18+ "%d[%d]";
* "Bootstrap : Using" up to 2.23, "Bootstrap: Using" from 2.24;
* 2.27+: "Failed to initialize NET plugin IB" when NCCL_IB_DISABLE=1;
* 2.26+: optional timestamp prefix "[%F %T] " (NCCL_DEBUG_TIMESTAMP_LEVELS);
* "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx [commId 0x%llx] - Init COMPLETE",
  with the "ncclCommInitRank " prefix in recent versions (observed in a 2.2x log).

Run from the repository root: python3 tools/make_nccl_fixtures.py
"""

import os

OUT = os.path.join(os.path.dirname(__file__), "..", "src", "nccl", "testdata")


class Proc:
    def __init__(self, host, pid, dev, rank, nranks, bus, version, prefix="", ts="", header=None):
        self.host, self.pid, self.dev, self.rank, self.nranks = host, pid, dev, rank, nranks
        self.bus, self.version, self.prefix, self.ts = bus, version, prefix, ts
        # What precedes " [dev]": NCCL's "host:pid:tid", or what a poster left of it.
        self.header = header(self) if header else "%s:%d:%d" % (host, pid, pid)

    def info(self, msg):
        return "%s%s%s [%d] NCCL INFO %s" % (self.prefix, self.ts, self.header, self.dev, msg)

    def warn(self, where, msg):
        # debug.cc prints a newline before every WARN line, and from 2.26 a timestamp on WARN lines
        # by default (NCCL_DEBUG_TIMESTAMP_LEVELS=WARN).
        minor = int(self.version.split(".")[1])
        ts = self.ts or ("[2026-11-29 10:00:01] " if minor >= 26 else "")
        return "\n%s%s%s [%d] %s NCCL WARN %s" % (self.prefix, ts, self.header, self.dev, where, msg)

    def peer(self, rank, dev, bus):
        minor = int(self.version.split(".")[1])
        return "%d[%x]" % (rank, bus) if minor < 18 else "%d[%d]" % (rank, dev)

    def init_complete(self, comm_id):
        minor = int(self.version.split(".")[1])
        if minor < 18:
            return self.info("comm 0x55d5f0a1b2c0 rank %d nranks %d cudaDev %d busId %x - Init "
                             "COMPLETE" % (self.rank, self.nranks, self.dev, self.bus))
        head = "ncclCommInitRank " if minor >= 21 else ""
        return self.info("%scomm 0x5e303a52bd70 rank %d nranks %d cudaDev %d nvmlDev %d busId %x "
                         "commId %s - Init COMPLETE" % (head, self.rank, self.nranks, self.dev,
                                                        self.dev, self.bus, comm_id))


def job(version, hosts, net, nics, oob, gdr=True, prefix=None, ts="", env=(), ib_disable=False,
        no_device_hosts=(), comm_id="0xadcb40d61cc1bc4b", extra=None, header=None,
        bare_version=False, warns=(), net_name=None, by_host=False):
    """Two GPUs per host, ring rank order host by host. Returns interleaved lines.

    bare_version: rank 0's "NCCL version" line without header, as printf printed it (showVersion
    in init.cc up to about 2.18) after ncclInit, so after its network lines.
    warns: (stage, ranks, "file:line", message) WARN lines, stage "net" (after the network is
    chosen), "init" (before Init COMPLETE) or "after" (after it); ranks None for every rank.
    net_name: the plugin name in "Using network" and the channels when it is not `net` (the SHARP
    plugin prints NET/IB device lines and calls itself IBext).
    """
    minor = int(version.split(".")[1])
    procs = []
    nranks = 2 * len(hosts)
    for h, host in enumerate(hosts):
        for dev in range(2):
            rank = 2 * h + dev
            pre = prefix(host, rank) if prefix else ""
            procs.append(Proc(host, 4000 + 100 * h + dev, dev, rank, nranks, 0x18000 + dev * 0x1000,
                              version, pre, ts, header))

    def warn_lines(p, stage):
        return [p.warn(where, msg) for st, ranks, where, msg in warns
                if st == stage and (ranks is None or p.rank in ranks)]

    per = []
    for p in procs:
        lines = []
        if p.rank == 0 and not bare_version:
            lines.append(p.info("NCCL version %s+cuda12.2" % version))
        boot = "Bootstrap : Using" if minor <= 23 else "Bootstrap: Using"
        lines.append(p.info("%s %s:10.0.%d.%d<0>" % (boot, oob, hosts.index(p.host), 1)))
        for name, value in env:
            lines.append(p.info("%s set by environment to %s." % (name, value)))
        fell_back = p.host in no_device_hosts or ib_disable
        if minor >= 27:
            lines.append(p.info("NET/Plugin: Could not find: libnccl-net.so."))
        elif minor >= 21:
            lines.append(p.info("NET/Plugin: Could not find: libnccl-net.so. Using internal "
                                "network plugin."))
        else:
            lines.append(p.info("NET/Plugin : No plugin found (libnccl-net.so), using internal "
                                "implementation"))
        if extra:
            lines += [p.info(m) for m in extra.get("pre_net", [])]
        if ib_disable:
            if minor >= 27:
                lines.append(p.info("Failed to initialize NET plugin IB"))
                lines.append(p.info("Initialized NET plugin Socket"))
                lines.append(p.info("Assigned NET plugin Socket to comm"))
            this_net = "Socket"
        elif p.host in no_device_hosts:
            lines.append(p.info("NET/IB : No device found."))
            this_net = "Socket"
            if extra and "warn" in extra:  # NCCL_NET forces IB: init stops here
                lines.append(p.warn(*extra["warn"]))
                per.append(lines)
                continue
        else:
            this_net = net_name or net
            if net == "IB":
                devs = " ".join("[%d]%s" % (i, n) for i, n in enumerate(nics))
                lines.append(p.info("NET/IB : Using %s [RO]; OOB %s:10.0.%d.1<0>" % (
                    devs, oob, hosts.index(p.host))))
        if this_net == "Socket":
            lines.append(p.info("NET/Socket : Using [0]eth0:10.1.%d.1<0>" % hosts.index(p.host)))
            if minor >= 20:
                lines.append(p.info("NET/Socket: Using 2 threads and 8 sockets per thread"))
        lines.append(p.info("Using network %s" % this_net))
        if p.rank == 0 and bare_version:
            lines.append("NCCL version %s+cuda11.2" % version)
        lines += warn_lines(p, "net")
        # Ring: 0 -> 1 (same host, P2P), 1 -> 2 (NET), ..., last -> 0 (NET)
        for ch in range(2):
            chan = "Channel %02d" % ch if minor < 12 else "Channel %02d/0" % ch
            nxt = procs[(p.rank + 1) % nranks]
            prv = procs[(p.rank - 1) % nranks]
            if nxt.host == p.host:
                lines.append(p.info("%s : %s -> %s via P2P/CUMEM/read" % (
                    chan, p.peer(p.rank, p.dev, p.bus), p.peer(nxt.rank, nxt.dev, nxt.bus))))
            else:
                suffix = "/GDRDMA" if gdr and this_net != "Socket" else ""
                lines.append(p.info("%s : %s -> %s [send] via NET/%s/%d%s" % (
                    chan, p.peer(p.rank, p.dev, p.bus), p.peer(nxt.rank, nxt.dev, nxt.bus),
                    this_net, p.dev, suffix)))
            if prv.host != p.host:
                suffix = "/GDRDMA" if gdr and this_net != "Socket" else ""
                lines.append(p.info("%s : %s -> %s [receive] via NET/%s/%d%s" % (
                    chan, p.peer(prv.rank, prv.dev, prv.bus), p.peer(p.rank, p.dev, p.bus),
                    this_net, p.dev, suffix)))
        lines += warn_lines(p, "init")
        lines.append(p.init_complete(comm_id))
        lines += warn_lines(p, "after")
        per.append(lines)
    # Interleave processes line by line, as a shared stdout would; by_host: each host's lines
    # after the previous host's (per-node logs concatenated).
    groups = [[l for p, l in zip(procs, per) if p.host == h] for h in hosts] if by_host else [per]
    out = []
    for group in groups:
        for i in range(max(len(l) for l in group)):
            for l in group:
                if i < len(l):
                    out.append(l[i])
    return out


def nccl_tests_new(rows, wrong_at=None, hosts=("node-a", "node-b")):
    lines = [
        "# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 4(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
        "#",
        "# Using devices",
    ]
    r = 0
    for h in hosts:
        for dev in range(2):
            lines.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%04x:%02x:%02x] NVIDIA "
                         "H100 80GB HBM3" % (r, 4000 + r, h, dev, 0, 0x18 + dev, 0))
            r += 1
    lines += [
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
    ]
    total = 0.0
    for i, (size, t, bus) in enumerate(rows):
        alg = size / t / 1e3
        wrong = 3 if wrong_at == i else 0
        lines.append("%12d  %12d  %8s  %6s  %6s  %7.2f  %6.2f  %6.2f  %6d  %7.2f  %6.2f  %6.2f  %6d" % (
            size, size // 4, "float", "sum", -1, t, alg, bus, 0, t, alg, bus, wrong))
        total += 2 * bus
    lines += [
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : %g " % (total / (2 * len(rows))),
        "#",
        "# Collective test concluded: all_reduce_perf",
    ]
    return lines


def nccl_tests_old_error(rows, out_of_bounds, broadcast=False, hosts=16, gpus=8):
    """nccl-tests before #wrong: per-collective headers ("redop" for all_reduce, "root" for
    broadcast), error column "%5.0le" (a trailing '*' where the version flags it)."""
    lines = ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup "
             "iters: 5 iters: 20 validation: 1", "#", "# Using devices"]
    for r in range(hosts * gpus):
        lines.append("#   Rank %3d Pid %6d on %10s device  %d [0x%02x] Tesla V100-SXM2-32GB" % (
            r, 20000 + r, "gpu%02d" % (r // gpus), r % gpus, 0x1a + r % gpus))
    col = "root" if broadcast else "redop"
    lines += [
        "#",
        "#                                                     out-of-place                       in-place          ",
        "#       size         count    type   %5s     time   algbw   busbw  error     time   algbw   busbw  error" % col,
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    ]
    total = 0.0
    for size, error in rows:
        t = 20.0 + size / 90e3
        alg = size / t / 1e3
        bus = alg * (1.0 if broadcast else 2.0 * 127 / 128)
        lines.append("%12d  %12d  %6s  %6s  %7.1f  %6.2f  %6.2f  %5s  %7.1f  %6.2f  %6.2f  %5s" % (
            size, size // 4, "float", "0" if broadcast else "sum", t, alg, bus,
            error if "*" not in error else "0e+00", t, alg, bus, error))
        total += 2 * bus
    lines += ["# Out of bounds values : %d %s" % (out_of_bounds, "FAILED" if out_of_bounds else "OK"),
              "# Avg bus bandwidth    : %g " % (total / (2 * len(rows))), "#"]
    return lines


def write(name, lines):
    with open(os.path.join(OUT, name), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    ib = ["mlx5_0:1/IB", "mlx5_1:1/IB"]

    # Healthy IB jobs on several versions.
    write("ib-2.12.log", job("2.12.12", ["node-a", "node-b"], "IB", ib, "ib0"))
    write("ib-2.18.log", job("2.18.3", ["node-a", "node-b"], "IB", ib, "ib0"))
    # RoCE with mpirun prefixes.
    write("roce-2.21-mpirun.log", job(
        "2.21.5", ["roce-a", "roce-b"], "IB", ["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"], "eth0",
        prefix=lambda host, rank: "[1,%d]<stdout>:" % rank))
    # EFA through aws-ofi-nccl (network "Libfabric").
    write("efa-2.27.log", job(
        "2.27.3", ["ip-10-0-1-5", "ip-10-0-1-6"], "Libfabric", [], "ens32",
        extra={"pre_net": ["NET/OFI Using Libfabric version 1.22",
                           "NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
                           "NET/Plugin: Loaded net plugin Libfabric (v9)"]}))
    # Everything on sockets (a cloud VM without EFA): fine unless RDMA is expected.
    write("socket-2.12.log", job("2.12.12", ["vm-1", "vm-2"], "IB", ib, "ens5",
                                 no_device_hosts=("vm-1", "vm-2")))
    # One host fell back: kubectl logs --prefix, with 2.26+ timestamps on every line.
    write("mixed-2.30-kubectl.log", job(
        "2.30.3", ["train-worker-0", "train-worker-1"], "IB", ib, "ib0",
        prefix=lambda host, rank: "[pod/%s/pytorch] " % host, ts="[2026-11-29 10:00:01] ",
        no_device_hosts=("train-worker-1",)))
    # NCCL_IB_DISABLE=1 everywhere (2.27 logs the plugin failure).
    write("ib-disable-2.27.log", job("2.27.3", ["node-a", "node-b"], "IB", ib, "ib0",
                                     env=[("NCCL_IB_DISABLE", "1")], ib_disable=True))
    # IB without GPUDirect RDMA.
    write("ib-nogdr-2.21.log", job("2.21.5", ["node-a", "node-b"], "IB", ib, "ib0", gdr=False))
    # Init failure: NCCL_NET=IB forced on nodes without RDMA.
    write("init-failed-2.27.log", job(
        "2.27.3", ["node-a", "node-b"], "IB", ib, "ib0", env=[("NCCL_NET", "IB")],
        no_device_hosts=("node-a", "node-b"),
        extra={"warn": ("plugin/net.cc:621", "Failed to initialize any NET plugin")}))
    # WARN lines NCCL prints during a good init (issue 14): an all-socket VM job on 2.12 where
    # libibverbs is missing (ibvwrap.cc's WARN, then the socket transport) and the topology
    # search falls back to the simple order (graph/search.cc). Init completes everywhere.
    write("warn-benign-2.12.log", job(
        "2.12.12", ["vm-1", "vm-2"], "Socket", [], "ens5", warns=[
            ("net", None, "misc/ibvwrap.cc:63", "Failed to open libibverbs.so[.1]"),
            ("init", None, "graph/search.cc:765",
             "Could not find a path for pattern 4, falling back to simple order")]))
    # A WARN the classifier does not know, followed by Init COMPLETE (devCommSetup in 2.15-2.18
    # ignores a NCCL_WORK_FIFO_DEPTH that is not a power of 2 and goes on): info. And one after
    # Init COMPLETE that no Init COMPLETE follows: an IB completion error at run time.
    write("warn-resolved-2.18.log", job(
        "2.18.3", ["node-a", "node-b"], "IB", ib, "ib0", warns=[
            ("init", [0], "init.cc:400",
             "NCCL_WORK_FIFO_DEPTH=1000 is being ignored because it is not a power of 2."),
            ("after", [3], "transport/net_ib.cc:1295",
             "NET/IB : Got completion from peer 10.0.0.1<53142> with error 12, opcode 0, len 0, "
             "vendor err 129 (Recv)")]))
    # NCCL_DEBUG=WARN (2.29): no INFO line at all, the bare version line of the VERSION level, and
    # the verbs wrapper WARN every rank prints when libibverbs lacks a symbol (healthy jobs).
    warn_only = ["NCCL version 2.29.7+cuda13.2"]
    for dev in range(4):
        warn_only += ["", "[2026-11-29 10:00:01] gpu-dev-1:%d:%d [%d] misc/ibvwrap.cc:173 NCCL WARN "
                      "lib wrapper not initialized." % (1795 + dev, 1795 + dev, dev)]
    write("warn-only-2.29.log", ["Loading checkpoint shards: 100%"] + warn_only +
          ["step 0 loss 2.31"])
    # A bare "NCCL version" line (printf in showVersion, rank 0, after ncclInit's network lines),
    # the nodes' logs one after the other: the next line is another process's, and the next new
    # process is node-b's.
    write("bare-version-2.8.log", job("2.8.4", ["node-a", "node-b"], "IB", ib, "ib0",
                                      bare_version=True, by_host=True))
    # The SHARP plugin: NET/IB device lines with a "/SHARP" flag after the link layer, network
    # IBext.
    write("ib-sharp-2.12.log", job("2.12.12", ["node-a", "node-b"], "IB",
                                   ["mlx5_0:1/IB/SHARP", "mlx5_1:1/IB/SHARP"], "ib0",
                                   net_name="IBext"))
    # Pids redacted by whoever posted the log: "host:XXXXXX [dev]". One rank hits an IB error
    # after init.
    write("redacted-pid-2.18.log", job(
        "2.18.3", ["node-a", "node-b"], "IB", ib, "ib0", header=lambda p: "%s:XXXXXX" % p.host,
        warns=[("after", [3], "transport/net_ib.cc:1295",
                "NET/IB : Got completion from peer 10.0.0.1<53142> with error 12, opcode 0, "
                "len 0, vendor err 129 (Recv)")]))
    # Nothing left of the header but " [dev]" (one host, two GPUs), and a WARN with nothing
    # before the keyword at all.
    write("no-header-2.12.log", job("2.12.12", ["node-a"], "IB", ib, "ib0",
                                    header=lambda p: "") +
          ["", "NCCL WARN Cuda failure 'an illegal memory access was encountered'"])
    # A training log without NCCL_DEBUG.
    write("no-debug.log", ["Epoch: [0][  0/625]\tTime 12.807 (12.807)\tLoss 6.7861e+00",
                           "Epoch: [0][ 10/625]\tTime  1.425 ( 2.465)\tLoss 0.0000e+00"])
    # nccl-tests, new layout, NCCL INFO lines of the same run before the table.
    sizes = [(1 << 20, 27.76, 66.11), (1 << 24, 180.2, 163.7), (1 << 28, 1510.0, 311.4),
             (1 << 30, 5820.0, 322.6)]
    write("nccl-tests-new.log", job("2.27.3", ["node-a", "node-b"], "IB", ib, "ib0") +
          nccl_tests_new(sizes))
    write("nccl-tests-wrong.log", nccl_tests_new(sizes, wrong_at=2))
    # nccl-tests, old layout (no root column, "error", -c 0 prints N/A), behind mpirun prefixes.
    write("nccl-tests-old.log", [
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: "
        "20 validation: 0",
        "#",
        "# Using devices",
        "#   Rank  0 Pid   1320 on ip-172-31-20-228 device  0 [0x00] Tesla V100-SXM2-16GB",
        "#                                                     out-of-place                       in-place",
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        "[1,0]<stdout>:           8             2   float     sum    41.95    0.00    0.00    N/A    41.23    0.00    0.00    N/A",
        "[1,0]<stdout>:     1048576        262144   float     sum    120.4    8.71   15.24    N/A    119.8    8.75   15.32    N/A",
        "[1,0]<stdout>:   134217728      33554432   float     sum   1385.4   96.88  169.54    N/A   1384.7   96.93  169.63    N/A",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 61.6217 ",
    ])
    # nccl-tests before 2.12: an "error" column (the largest difference, "%5.0le"), not #wrong.
    # A passing 128-GPU run, where float sums differ by 1e-06 and so on within the tolerance.
    write("nccl-tests-old-error.log", nccl_tests_old_error(
        [(8, "0e+00"), (1 << 10, "1e-06"), (1 << 20, "2e-06"), (1 << 24, "2e-06"),
         (1 << 27, "4e-06"), (1 << 30, "4e-06")], out_of_bounds=0))
    # Failing old runs: one marks the rows beyond the tolerance with '*' (CheckData's error flag),
    # the other (broadcast, "type root" columns) only counts them on "Out of bounds values".
    write("nccl-tests-old-failed.log",
          nccl_tests_old_error([(1 << 20, "2e-06"), (1 << 24, "3e+00*"), (1 << 27, "1e+00*")],
                               out_of_bounds=2, hosts=2) +
          nccl_tests_old_error([(1 << 20, "0e+00"), (1 << 24, "5e+00")], out_of_bounds=1,
                               broadcast=True, hosts=2))
    # Truncated and garbage input: a log cut mid-line, binary bytes, a NUL.
    good = job("2.18.3", ["node-a", "node-b"], "IB", ib, "ib0")
    with open(os.path.join(OUT, "truncated.log"), "wb") as f:
        f.write(("\n".join(good[:20]) + "\n").encode())
        f.write(b"\xff\xfe\x00garbage NCCL INFO \x01\x02\n")
        f.write(b"node-a:4000:4000 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CU\xe2\x82")
    # A job's log as `kubectl logs` shows it while NCCL is still bootstrapping: versions and
    # bootstrap lines, no network chosen yet (the transport cannot be told).
    write("no-network-2.18.log",
          [line for line in good if "NCCL version" in line or "Bootstrap" in line or
           "NET/Plugin" in line])


if __name__ == "__main__":
    main()
