#!/usr/bin/env python3
"""Writes the whole-node fixture trees under testdata/nodes/.

Each tree stands in for "/" of one node (tocsin node --root DIR). File contents follow the
formats described, with their upstream sources, in docs/FORMATS.md: "InfiniBand sysfs",
"Network interfaces sysfs", "PCI sysfs", "Mount table" and "Lustre". Symlinks are laid out as
sysfs lays them out: class entries are relative links into /sys/devices/pci..., and every
`device` link is relative too.

Run from the repository root: python3 tools/make_node_fixtures.py
The trees are committed; rerun this after changing it and commit the result.
"""

import os
import shutil

OUT = os.path.join(os.path.dirname(__file__), "..", "testdata", "nodes")

# ConnectX-7 (PCI device 0x1021 -> hca_type "MT4129"), ConnectX-6 Dx (0x101d -> "MT4125").
CX7 = {"device": "0x1021", "hca_type": "MT4129", "fw_ver": "28.39.1002", "board_id": "MT_0000000838"}
CX6DX = {"device": "0x101d", "hca_type": "MT4125", "fw_ver": "22.39.1002", "board_id": "MT_0000000359"}
MOFED = "24.10-0.7.0"  # the MLNX_OFED/DOCA-OFED mlx5_core's MODULE_VERSION
H100 = {"vendor": "0x10de", "device": "0x2330", "class": "0x030200"}

COUNTERS_ZERO = [
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
    "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
    "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_wait",
]


class Tree:
    def __init__(self, name):
        self.root = os.path.join(OUT, name)
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def write(self, p, text):
        full = self.path(p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def mkdir(self, p):
        os.makedirs(self.path(p), exist_ok=True)

    def link(self, p, target):
        full = self.path(p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)

    def rel_link(self, p, target_abs):
        """Symlink at p pointing to target_abs, written relative as sysfs does."""
        rel = os.path.relpath(target_abs, os.path.dirname(p))
        self.link(p, rel)


def base_node(t, hostname, mounts):
    t.write("/proc/sys/kernel/hostname", hostname + "\n")
    t.link("/proc/self", "4242")
    lines = ["22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
             "23 27 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw",
             "27 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro"]
    lines += mounts
    t.write("/proc/4242/mountinfo", "\n".join(lines) + "\n")
    # Loopback: virtual, no device link; reading its speed fails on a real kernel (EINVAL).
    lo = "/sys/devices/virtual/net/lo"
    t.write(lo + "/operstate", "unknown\n")
    t.write(lo + "/mtu", "65536\n")
    t.write(lo + "/address", "00:00:00:00:00:00\n")
    t.write(lo + "/type", "772\n")
    t.rel_link("/sys/class/net/lo", lo)
    t.mkdir("/sys/class/infiniband_verbs")  # present with the RDMA core; harmless elsewhere


class Pci:
    """One PCIe hierarchy: host bridge -> root port -> switch upstream -> downstream ports."""

    def __init__(self, t, bus, numa):
        self.t = t
        self.bus = bus
        self.numa = numa
        self.host = "/sys/devices/pci0000:%02x" % bus
        self.rp = "0000:%02x:01.0" % bus
        self.up = "0000:%02x:00.0" % (bus + 1)
        self.next_port = 0
        self.bridge(self.host + "/" + self.rp, "0x8086")
        self.bridge(self.host + "/" + self.rp + "/" + self.up, "0x1000")

    def bridge(self, d, vendor):
        self.function(d, vendor, "0xc030", "0x060400")

    def function(self, d, vendor, device, cls):
        t = self.t
        t.write(d + "/vendor", vendor + "\n")
        t.write(d + "/device", device + "\n")
        t.write(d + "/class", cls + "\n")
        t.write(d + "/numa_node", "%d\n" % self.numa)
        t.rel_link("/sys/bus/pci/devices/" + os.path.basename(d), d)

    def device(self, vendor, device, cls):
        """A PCI function under its own downstream port of the switch; returns its sysfs dir."""
        dp = "0000:%02x:%02x.0" % (self.bus + 2, self.next_port)
        addr = "0000:%02x:00.0" % (self.bus + 3 + self.next_port)
        self.next_port += 1
        dp_dir = self.host + "/" + self.rp + "/" + self.up + "/" + dp
        self.bridge(dp_dir, "0x1000")
        d = dp_dir + "/" + addr
        self.function(d, vendor, device, cls)
        return d


def gpu(pci):
    return pci.device(H100["vendor"], H100["device"], H100["class"])


def netdev(t, pci_dir, name, operstate, speed, mtu, address, type_,
           stats=(734003200, 524288000)):
    d = pci_dir + "/net/" + name
    t.write(d + "/operstate", operstate + "\n")
    if speed is not None:
        t.write(d + "/speed", "%d\n" % speed)
    t.write(d + "/mtu", "%d\n" % mtu)
    t.write(d + "/address", address + "\n")
    t.write(d + "/type", "%d\n" % type_)
    # sysfs-class-net-statistics: "%llu\n" byte counters since the interface appeared.
    t.write(d + "/statistics/rx_bytes", "%d\n" % stats[0])
    t.write(d + "/statistics/tx_bytes", "%d\n" % stats[1])
    t.rel_link(d + "/device", pci_dir)
    t.rel_link("/sys/class/net/" + name, d)


def guid(i):
    return "0c42:a103:00e4:%04x" % (0x9b00 + i)


def hca(t, pci, i, model, link_layer="InfiniBand", state="4: ACTIVE", phys="5: LinkUp",
        rate="400 Gb/sec (4X NDR)", counters=None, hostname="gpu-node"):
    """An mlx5 HCA with one port; returns the port directory."""
    cls = "0x020700" if link_layer == "InfiniBand" else "0x020000"
    d = pci.device("0x15b3", model["device"], cls)
    name = "mlx5_%d" % i
    ib = d + "/infiniband/" + name
    t.write(ib + "/node_guid", guid(i) + "\n")
    t.write(ib + "/sys_image_guid", guid(i) + "\n")
    t.write(ib + "/fw_ver", model["fw_ver"] + "\n")
    t.write(ib + "/hca_type", model["hca_type"] + "\n")
    t.write(ib + "/hw_rev", "0x0\n")
    t.write(ib + "/board_id", model["board_id"] + "\n")
    t.write(ib + "/node_type", "1: CA\n")
    t.write(ib + "/node_desc", "%s %s\n" % (hostname, name))
    t.rel_link(ib + "/device", d)
    t.rel_link("/sys/class/infiniband/" + name, ib)
    port = ib + "/ports/1"
    t.write(port + "/state", state + "\n")
    t.write(port + "/phys_state", phys + "\n")
    t.write(port + "/rate", rate + "\n")
    t.write(port + "/link_layer", link_layer + "\n")
    t.write(port + "/lid_mask_count", "0\n")
    t.write(port + "/sm_sl", "0\n")
    t.write(port + "/pkeys/0", "0xffff\n")
    c = {n: 0 for n in COUNTERS_ZERO}
    c.update({"port_xmit_data": 91231232345 + i, "port_rcv_data": 91230002345 + i,
              "port_xmit_packets": 45123456 + i, "port_rcv_packets": 45120006 + i})
    c.update(counters or {})
    for k, v in c.items():
        t.write(port + "/counters/" + k, "%s\n" % v)
    if link_layer == "InfiniBand":
        t.write(port + "/lid", "0x%x\n" % (0x1a + i))
        t.write(port + "/sm_lid", "0x1\n")
        t.write(port + "/cap_mask", "0xa651e848\n")
        g = "fe80:0000:0000:0000:" + guid(i)
        t.write(port + "/gids/0", g + "\n")
        for k in range(1, 4):
            t.write(port + "/gids/%d" % k, "0000:0000:0000:0000:0000:0000:0000:0000\n")
        t.write(port + "/gid_attrs/types/0", "IB/RoCE v1\n")
        up = state == "4: ACTIVE"
        lid_speed = int(rate.split()[0]) * 1000 if up else None
        netdev(t, d, "ib%d" % i, "up" if up else "down", lid_speed, 4092,
               "00:00:10:29:fe:80:00:00:00:00:00:00:" + ":".join(
                   [guid(i).replace(":", "")[j:j + 2] for j in range(0, 16, 2)]), 32)
    else:
        ifname = "ens%df0np0" % (i + 1)
        t.write(port + "/lid", "0x0\n")
        t.write(port + "/sm_lid", "0x0\n")
        t.write(port + "/cap_mask", "0x04010000\n")
        ll = "fe80:0000:0000:0000:0e42:a1ff:fee4:%04x" % (0x9b00 + i)
        v4 = "0000:0000:0000:0000:0000:ffff:0a64:%04x" % (0x0100 + i)
        for k, (g, typ) in enumerate([(ll, "IB/RoCE v1"), (ll, "RoCE v2"), (v4, "IB/RoCE v1"),
                                      (v4, "RoCE v2")]):
            t.write(port + "/gids/%d" % k, g + "\n")
            t.write(port + "/gid_attrs/types/%d" % k, typ + "\n")
            t.write(port + "/gid_attrs/ndevs/%d" % k, ifname + "\n")
        t.write(port + "/gids/4", "0000:0000:0000:0000:0000:0000:0000:0000\n")
        netdev(t, d, ifname, "up", 100000, 9000, "0c:42:a1:e4:9b:%02x" % i, 1)
    return port


def mlx5_module(t, version=MOFED):
    """The loaded mlx5_core module: /sys/module/<name>/ (kernel/params.c) has `initstate` and,
    only when the module declares MODULE_VERSION, `version` (MOFED's driver does; an in-tree
    one may not: version=None)."""
    t.write("/sys/module/mlx5_core/initstate", "live\n")
    if version is not None:
        t.write("/sys/module/mlx5_core/version", version + "\n")


def mgmt_nic(t, pci):
    d = pci.device("0x8086", "0x1563", "0x020000")  # Intel X550 management port
    netdev(t, d, "eno1", "up", 10000, 1500, "3c:ec:ef:00:00:01", 1)


def nvswitches(t, bus):
    """NVSwitches are NVIDIA functions of class 0x0680: not GPUs."""
    p = Pci(t, bus, 1)
    for _ in range(4):
        p.device("0x10de", "0x22a3", "0x068000")


LUSTRE_MOUNT = ("36 27 0:52 / /mnt/lustre rw,relatime shared:40 - lustre "
                "10.0.0.1@o2ib,10.1.0.1@tcp:10.0.0.2@o2ib:/testfs rw,flock,lazystatfs,encrypt")
NFS_MOUNT = ("37 27 0:53 / /home rw,relatime shared:41 - nfs4 nfs-home:/export/home "
             "rw,vers=4.2,rsize=1048576,wsize=1048576,hard,proto=tcp,timeo=600,sec=sys")


def lustre_import(name, target, state, nid="10.0.0.2@o2ib", timeouts=0):
    return (
        "import:\n"
        "    name: %s\n"
        "    target: %s\n"
        "    state: %s\n"
        "    connect_flags: [ write_grant, server_lock, version, request_portal, truncate_lock, "
        "max_byte_per_rpc, early_lock_cancel, adaptive_timeouts, lru_resize, fid_is_enabled, "
        "version_recovery, grant_shrink, full20, layout_lock, 64bithash, jobstats, "
        "lvb_type, short_io, flr, lock_convert ]\n"
        "    connect_data:\n"
        "       flags: 0xa0425af2e3440078\n"
        "       instance: 39\n"
        "       target_version: 2.15.5.0\n"
        "       initial_grant: 8437760\n"
        "       max_brw_size: 4194304\n"
        "    import_flags: [ replayable, pingable, connect_tried ]\n"
        "    connection:\n"
        "       failover_nids: [ \"%s\", \"10.0.0.3@o2ib\" ]\n"
        "       current_connection: \"%s\"\n"
        "       connection_attempts: 1\n"
        "       generation: 1\n"
        "       in-progress_invalidations: 0\n"
        "       idle: 12 sec\n"
        "    rpcs:\n"
        "       inflight: 0\n"
        "       unregistering: 0\n"
        "       timeouts: %d\n"
        "       avg_waittime: 612 usecs\n"
        "    service_estimates:\n"
        "       services: 1 sec\n"
        "       network: 1 sec\n"
        "    transactions:\n"
        "       last_replay: 0\n"
        "       peer_committed: 0\n"
        "       last_checked: 0\n" % (name, target, state, nid, nid, timeouts))


def lustre_state(current, history):
    lines = ["current_state: %s" % current, "state_history:"]
    lines += [" - [ %d, %s ]" % (ts, s) for ts, s in history]
    return "\n".join(lines) + "\n"


LLITE_STATS = (
    "snapshot_time             1764440000.123456789 secs.nsecs\n"
    "start_time                1761000000.000000000 secs.nsecs\n"
    "elapsed_time              3440000.123456789 secs.nsecs\n"
    "read_bytes                1024 samples [bytes] 4096 1048576 536870912 281474976710656\n"
    "write_bytes               512 samples [bytes] 4096 1048576 268435456 140737488355328\n"
    "open                      12 samples [usec] 15 230 910 120000\n"
    "close                     12 samples [usec] 4 40 130 2100\n"
    "getattr                   40 samples [usec] 2 90 700 16000\n")

# osc.*.stats (ptlrpc service stats, debugfs; lustre/ptlrpc/lproc_ptlrpc.c): req_waittime is
# the RPC round trip in usecs.
OSC_STATS = (
    "snapshot_time             1764440000.223456789 secs.nsecs\n"
    "start_time                1761000000.000000000 secs.nsecs\n"
    "elapsed_time              3440000.223456789 secs.nsecs\n"
    "req_waittime              2200 samples [usecs] 45 98000 1100000 4400000000\n"
    "req_active                2200 samples [reqs] 1 8 3300 6600\n"
    "read_bytes                1024 samples [bytes] 4096 1048576 268435456 140737488355328\n"
    "write_bytes               256 samples [bytes] 4096 1048576 134217728 70368744177664\n"
    "ost_read                  1024 samples [usecs] 60 98000 900000 3600000000\n"
    "ost_write                 256 samples [usecs] 80 45000 200000 700000000\n"
    "obd_ping                  920 samples [usecs] 45 800 65000 9000000\n")

HEALTHY_HISTORY = [(1761000000, "CONNECTING"), (1761000001, "FULL")]


def lustre_client(t, root, devices, instance="ffff8c5a4b6e9000"):
    """devices: list of (kind, target, state, history, timeouts)."""
    for kind, target, state, history, timeouts in devices:
        tag = "osc" if kind == "osc" else "mdc"
        name = "testfs-%s-%s-%s" % (target, tag, instance)
        d = "%s/%s/%s" % (root, kind, name)
        t.write(d + "/import", lustre_import(name, "testfs-%s_UUID" % target, state,
                                             timeouts=timeouts))
        t.write(d + "/state", lustre_state(state, history))
        if kind == "osc":
            t.write("/sys/kernel/debug/lustre/osc/%s/stats" % name, OSC_STATS)
    t.write("/sys/kernel/debug/lustre/llite/testfs-%s/stats" % instance, LLITE_STATS)


def ib_node(name, gpu_numa=(0, 0, 1, 1), nic_numa=None, ports=None, lustre=None):
    """8 GPUs and 4 HCAs; by default two GPUs and one HCA under each of four PCIe switches."""
    t = Tree(name)
    mounts = [NFS_MOUNT] + ([LUSTRE_MOUNT] if lustre else [])
    base_node(t, "gpu-node-01", mounts)
    ports = ports or [{}] * 4
    if nic_numa is None:
        for i, (bus, numa) in enumerate(zip((0x00, 0x40, 0x80, 0xc0), gpu_numa)):
            p = Pci(t, bus, numa)
            gpu(p)
            gpu(p)
            hca(t, p, i, CX7, hostname="gpu-node-01", **ports[i])
    else:
        # GPUs and HCAs under different host bridges (different NUMA nodes).
        for bus, numa in zip((0x00, 0x20, 0x40, 0x60), gpu_numa):
            p = Pci(t, bus, numa)
            gpu(p)
            gpu(p)
        for i, (bus, numa) in enumerate(zip((0x80, 0xa0, 0xc0, 0xe0), nic_numa)):
            hca(t, Pci(t, bus, numa), i, CX7, hostname="gpu-node-01", **ports[i])
    mgmt_nic(t, Pci(t, 0x10, 0))
    nvswitches(t, 0xd0)
    mlx5_module(t)
    if lustre:
        lustre(t)
    return t


def main():
    # 1. Healthy IB node: 8 H100, 4 CX-7 NDR, Lustre 2.17 client (debugfs layout), NFS home.
    ib_node("ib-healthy", lustre=lambda t: lustre_client(t, "/sys/kernel/debug/lustre", [
        ("mdc", "MDT0000", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0000", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0001", "IDLE", HEALTHY_HISTORY + [(1764000000, "IDLE")], 0),
    ]))

    # 2. Port down and degraded rate: mlx5_2 has no link, mlx5_3 trained at 2X (200 Gb/s) with
    #    symbol errors and a saturated link_downed counter.
    ib_node("ib-port-down", ports=[
        {}, {},
        {"state": "1: DOWN", "phys": "2: Polling", "rate": "10 Gb/sec (4X SDR)"},
        {"rate": "200 Gb/sec (2X NDR)", "counters": {"symbol_error": 1234, "link_downed": 255}},
    ])

    # 3. GPUs on NUMA node 0, every HCA on NUMA node 1.
    ib_node("numa-mismatch", gpu_numa=(0, 0, 0, 0), nic_numa=(1, 1, 1, 1))

    # 4. RoCE node: 4 GPUs, 2 CX-6 Dx 100GbE ports, no Lustre.
    t = Tree("roce")
    base_node(t, "roce-node-07", [NFS_MOUNT])
    for i, bus in enumerate((0x00, 0x80)):
        p = Pci(t, bus, i)
        gpu(p)
        gpu(p)
        hca(t, p, i, CX6DX, link_layer="Ethernet", rate="100 Gb/sec (4X EDR)",
            hostname="roce-node-07")
    mgmt_nic(t, Pci(t, 0x10, 0))
    mlx5_module(t, version=None)  # the distribution kernel's own mlx5_core

    # 5. Lustre 2.15 client (procfs layout) whose OST0001 was evicted; one healthy HCA, no GPUs.
    t = Tree("lustre-evicted")
    base_node(t, "cpu-node-03", [LUSTRE_MOUNT])
    hca(t, Pci(t, 0x00, 0), 0, CX7, hostname="cpu-node-03")
    mlx5_module(t)
    lustre_client(t, "/proc/fs/lustre", [
        ("mdc", "MDT0000", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0000", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0001", "EVICTED", HEALTHY_HISTORY + [
            (1764300000, "DISCONN"), (1764300005, "CONNECTING"), (1764300010, "EVICTED")], 14),
        ("osc", "OST0002", "IDLE", HEALTHY_HISTORY + [(1764000000, "IDLE")], 0),
        ("osc", "OST0003", "DISCONN", HEALTHY_HISTORY + [(1764310000, "DISCONN")], 0),
    ])
    # OST0003's import cannot be read (a directory: EISDIR); its state file says DISCONN.
    ost3 = "/proc/fs/lustre/osc/testfs-OST0003-osc-ffff8c5a4b6e9000"
    os.remove(t.path(ost3 + "/import"))
    t.write(ost3 + "/import/.keep", "")  # a file inside, so that git keeps the directory

    # 5b. A Lustre OSS: two OSTs mounted with type lustre (an ldiskfs block device and a ZFS
    #     dataset), no client mount. Its targets are not client mounts.
    t = Tree("lustre-server")
    base_node(t, "oss-01", [
        "40 27 253:3 / /mnt/testfs/ost0 rw,relatime shared:42 - lustre /dev/mapper/ost0 rw",
        "41 27 0:61 / /mnt/testfs/ost1 rw,relatime shared:43 - lustre ostpool/ost1 rw"])
    hca(t, Pci(t, 0x00, 0), 0, CX7, hostname="oss-01")
    mlx5_module(t)

    # 6. A node with nothing: no RDMA, no GPUs, no shared filesystem.
    t = Tree("empty")
    base_node(t, "plain-node", [])
    p = Pci(t, 0x00, -1)
    netdev(t, p.device("0x1af4", "0x1041", "0x020000"), "eth0", "up", None, 1500,
           "02:fc:00:00:00:01", 1)

    # 7. A full-size HGX-style node: 8 H100 and 8 CX-7 NDR, one GPU and one HCA under each of
    #    eight PCIe switches (four per NUMA node), Lustre 2.17 client. The agent's footprint
    #    benchmark runs on it.
    t = Tree("ib-8x8")
    base_node(t, "gpu-node-08", [NFS_MOUNT, LUSTRE_MOUNT])
    for i in range(8):
        p = Pci(t, i * 0x20, i // 4)
        gpu(p)
        hca(t, p, i, CX7, hostname="gpu-node-08")
    mgmt_nic(t, Pci(t, 0xf0, 0))
    nvswitches(t, 0xd0)
    mlx5_module(t)
    lustre_client(t, "/sys/kernel/debug/lustre", [
        ("mdc", "MDT0000", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0000", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0001", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0002", "FULL", HEALTHY_HISTORY, 0),
        ("osc", "OST0003", "IDLE", HEALTHY_HISTORY + [(1764000000, "IDLE")], 0),
    ])

    # 8. Malformed input: every kind of bad file the readers must survive.
    t = Tree("malformed")
    base_node(t, "bad-node", [LUSTRE_MOUNT, "this is not a mountinfo line"])
    p = Pci(t, 0x00, 0)
    port0 = hca(t, p, 0, CX7, hostname="bad-node")
    mlx5_module(t, version=None)
    t.write("/sys/module/mlx5_core/version/.keep", "")  # a directory: reading it fails (EISDIR)
    t.write(port0 + "/state", "garbage\n")
    t.write(port0 + "/rate", "fast\n")
    t.write(port0 + "/counters/symbol_error", "abc\n")
    port1 = hca(t, p, 1, CX7, hostname="bad-node")
    os.remove(t.path(port1 + "/phys_state"))
    t.mkdir(port1 + "/phys_state")  # reading it fails (EISDIR)
    ib1 = os.path.dirname(os.path.dirname(port1))
    os.remove(t.path(ib1 + "/device"))
    t.link(ib1 + "/device", "../../../0000:ff:00.0")  # dangling
    g = gpu(p)
    t.write(g + "/numa_node", "zero\n")
    t.write("/proc/fs/lustre/osc/testfs-OST0000-osc-ffff8c5a4b6e9000/import",
            "import:\n    name: testfs-OST0000-osc-ffff8c5a4b6e9000\n    target: testfs-OS")


if __name__ == "__main__":
    main()
