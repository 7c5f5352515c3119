#include "agent/node_tasks.h"

#include <atomic>
#include <memory>

#include "agent/facts.h"
#include "agent/families.h"
#include "gpu/catalog.h"
#include "gpu/checks.h"
#include "node/affinity.h"
#include "rdma/catalog.h"
#include "rdma/checks.h"
#include "storage/catalog.h"
#include "storage/checks.h"

namespace tocsin::agent {
namespace {

using prometheus::MetricType;

std::string Str(int v) { return std::to_string(v); }

void RdmaFamilies(const rdma::Scan& scan, Families& fam) {
  fam.Family("tocsin_rdma_devices", "RDMA devices under /sys/class/infiniband.", MetricType::Gauge)
      .Add({}, static_cast<double>(scan.devices.size()));
  for (const auto& d : scan.devices) {
    for (const auto& p : d.ports) {
      Labels id = {{"device", d.name}, {"port", Str(p.number)}};
      Labels info = id;
      info.push_back({"link_layer", p.link_layer});
      info.push_back({"hca_type", d.hca_type});
      info.push_back({"fw_ver", d.fw_ver});
      info.push_back({"netdev", d.netdevs.empty() ? "" : d.netdevs.front()});
      info.push_back({"numa_node", d.pci ? Str(d.pci->numa_node) : "-1"});
      fam.Family("tocsin_rdma_port_info",
                 "Constant 1 per RDMA port, with its link layer, HCA, firmware and NUMA node.",
                 MetricType::Gauge)
          .Add(info, 1);
      if (p.state) {
        fam.Family("tocsin_rdma_port_up", "1 when the port state is ACTIVE, else 0.",
                   MetricType::Gauge)
            .Add(id, p.active() ? 1 : 0);
        fam.Family("tocsin_rdma_port_state",
                   "Port state code (1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER).",
                   MetricType::Gauge)
            .Add(id, p.state->code);
      }
      if (p.phys_state) {
        fam.Family("tocsin_rdma_port_phys_state",
                   "Physical port state code (2 Polling, 3 Disabled, 5 LinkUp, ...).",
                   MetricType::Gauge)
            .Add(id, p.phys_state->code);
      }
      if (p.rate) {
        fam.Family("tocsin_rdma_port_rate_bytes_per_second",
                   "Negotiated port rate (sysfs rate in Gb/s x 1e9 / 8).", MetricType::Gauge)
            .Add(id, p.rate->gbps * 1e9 / 8);
      }
      if (auto v = p.xmit_bytes()) {
        fam.Family("tocsin_rdma_port_transmit_bytes_total",
                   "Bytes sent (port_xmit_data x 4: the counter counts 32-bit words).",
                   MetricType::Counter)
            .Add(id, static_cast<double>(*v));
      }
      if (auto v = p.rcv_bytes()) {
        fam.Family("tocsin_rdma_port_receive_bytes_total",
                   "Bytes received (port_rcv_data x 4: the counter counts 32-bit words).",
                   MetricType::Counter)
            .Add(id, static_cast<double>(*v));
      }
      for (auto [file, name, help] :
           {std::tuple{"port_xmit_packets", "tocsin_rdma_port_transmit_packets_total",
                       "Packets sent (port_xmit_packets)."},
            std::tuple{"port_rcv_packets", "tocsin_rdma_port_receive_packets_total",
                       "Packets received (port_rcv_packets)."}}) {
        auto it = p.counters.find(file);
        if (it != p.counters.end() && it->second.value) {
          fam.Family(name, help, MetricType::Counter)
              .Add(id, static_cast<double>(*it->second.value));
        }
      }
      for (const char* counter : rdma::kErrorCounters) {
        auto it = p.counters.find(counter);
        if (it == p.counters.end() || !it->second.value) continue;
        Labels l = id;
        l.push_back({"counter", counter});
        fam.Family("tocsin_rdma_port_errors_total",
                   "Port error counters by sysfs name (a narrow counter saturates at its "
                   "maximum; tocsin_rdma_port_counter_saturated says so).",
                   MetricType::Counter)
            .Add(l, static_cast<double>(*it->second.value));
        if (it->second.saturated) {
          fam.Family("tocsin_rdma_port_counter_saturated",
                     "1 for a port counter stuck at its maximum (its true value is higher).",
                     MetricType::Gauge)
              .Add(l, 1);
        }
      }
    }
  }
}

void GpuFamilies(const node::Inventory& inv, Families& fam) {
  const auto& nvml = inv.gpus.nvml;
  fam.Family("tocsin_gpus", "NVIDIA GPUs (display-class PCI functions) on the PCI bus.",
             MetricType::Gauge)
      .Add({}, static_cast<double>(inv.gpus.gpus.size()));
  fam.Family("tocsin_nvml_up", "1 when NVML answered, else 0; status says why not.",
             MetricType::Gauge)
      .Add({{"status", nvml.status}}, nvml.status == "ok" ? 1 : 0);
  for (const auto& g : inv.gpus.gpus) {
    Labels id = {{"gpu", g.pci_address}};
    auto it = nvml.devices.find(g.pci_address);
    const gpu::NvmlDevice* dev = it == nvml.devices.end() ? nullptr : &it->second;
    fam.Family("tocsin_gpu_info", "Constant 1 per GPU, with its name, UUID and NUMA node.",
               MetricType::Gauge)
        .Add({{"gpu", g.pci_address},
              {"name", dev ? dev->name : ""},
              {"uuid", dev ? dev->uuid : ""},
              {"numa_node", g.pci ? Str(g.pci->numa_node) : "-1"}},
             1);
    if (!dev) continue;
    if (dev->utilization_gpu) {
      fam.Family("tocsin_gpu_utilization_ratio",
                 "Share of the last sample period a kernel ran on the GPU (NVML).",
                 MetricType::Gauge)
          .Add(id, *dev->utilization_gpu / 100.0);
    }
    if (dev->utilization_memory) {
      fam.Family("tocsin_gpu_memory_utilization_ratio",
                 "Share of the last sample period device memory was read or written (NVML).",
                 MetricType::Gauge)
          .Add(id, *dev->utilization_memory / 100.0);
    }
    if (dev->memory_total) {
      fam.Family("tocsin_gpu_memory_total_bytes", "Device memory (NVML).", MetricType::Gauge)
          .Add(id, static_cast<double>(*dev->memory_total));
    }
    if (dev->memory_used) {
      fam.Family("tocsin_gpu_memory_used_bytes", "Device memory in use (NVML).", MetricType::Gauge)
          .Add(id, static_cast<double>(*dev->memory_used));
    }
  }
  for (const auto& a : inv.affinity) {
    fam.Family("tocsin_gpu_nic_path_info",
               "Constant 1 per GPU: its closest RDMA NIC and the PCIe path type between them "
               "(PIX, PXB, PHB, NODE, SYS).",
               MetricType::Gauge)
        .Add({{"gpu", a.gpu},
              {"nic", a.nic},
              {"path", std::string(PciPathTypeName(a.path))},
              {"gpu_numa_node", Str(a.gpu_numa)},
              {"nic_numa_node", Str(a.nic_numa)}},
             1);
  }
}

// One Lustre stats file: samples per operation, plus bytes ([bytes] sums) and time ([usec(s)]
// sums) where the file has them. `prefix` is tocsin_lustre_llite or tocsin_lustre_osc.
void LustreStatsFamilies(const storage::LustreStats& stats, const Labels& base,
                         const std::string& prefix, Families& fam) {
  for (const auto& c : stats.counters) {
    Labels l = base;
    l.push_back({"op", c.name});
    if (c.unit == "bytes") {
      if (c.sum) {
        fam.Family(prefix + "_bytes_total", "Bytes moved by this operation (the stats file's sum).",
                   MetricType::Counter)
            .Add(l, static_cast<double>(*c.sum));
      }
    } else if (c.unit == "usec" || c.unit == "usecs") {
      if (c.sum) {
        fam.Family(prefix + "_operation_seconds_total",
                   "Time spent in this operation (the stats file's sum of usecs / 1e6).",
                   MetricType::Counter)
            .Add(l, *c.sum / 1e6);
      }
    }
    fam.Family(prefix + "_operations_total",
               "Operations counted by the Lustre client stats file (samples).", MetricType::Counter)
        .Add(std::move(l), static_cast<double>(c.count));
  }
}

void StorageFamilies(const storage::Scan& scan, Families& fam) {
  for (const auto& m : scan.mounts.mounts) {
    if (!storage::IsSharedMount(m)) continue;
    fam.Family("tocsin_shared_mount_info",
               "Constant 1 per mounted shared filesystem (Lustre, NFS, BeeGFS, ...).",
               MetricType::Gauge)
        .Add({{"mount_point", m.mount_point}, {"fstype", m.fstype}, {"source", m.source}}, 1);
  }
  for (const auto& d : scan.lustre_devices) {
    if (!d.import) continue;
    Labels id = {{"device", d.name}, {"target", d.import->target}};
    fam.Family("tocsin_lustre_import_healthy", "1 when the import state is FULL or IDLE, else 0.",
               MetricType::Gauge)
        .Add(id, storage::IsHealthyImportState(d.import->state) ? 1 : 0);
    Labels info = id;
    info.push_back({"state", d.import->state});
    info.push_back({"connection", d.import->current_connection});
    fam.Family("tocsin_lustre_import_info",
               "Constant 1 per OSC/MDC import, with its state and current connection.",
               MetricType::Gauge)
        .Add(info, 1);
    if (d.import->rpcs_inflight) {
      fam.Family("tocsin_lustre_import_rpcs_inflight", "RPCs in flight on this import.",
                 MetricType::Gauge)
          .Add(id, static_cast<double>(*d.import->rpcs_inflight));
    }
    if (d.import->rpcs_timeouts) {
      fam.Family("tocsin_lustre_import_rpc_timeouts_total", "RPCs of this import that timed out.",
                 MetricType::Counter)
          .Add(id, static_cast<double>(*d.import->rpcs_timeouts));
    }
    if (d.import->avg_waittime_usecs) {
      fam.Family("tocsin_lustre_import_avg_wait_seconds",
                 "Average RPC wait time of this import (avg_waittime).", MetricType::Gauge)
          .Add(id, *d.import->avg_waittime_usecs / 1e6);
    }
    if (d.stats) {
      LustreStatsFamilies(*d.stats, {{"device", d.name}}, "tocsin_lustre_osc", fam);
    }
  }
  for (const auto& [instance, stats] : scan.llite_stats) {
    LustreStatsFamilies(stats, {{"llite", instance}}, "tocsin_lustre_llite", fam);
  }
}

}  // namespace

TaskSpec RdmaTask(const std::string& root, const node::Options& options) {
  TaskSpec t;
  t.name = "rdma";
  t.checks = {rdma::kDeviceMissing, rdma::kPortDown, rdma::kPortRate, rdma::kPortLinkLayer,
              rdma::kPortErrors};
  t.run = [root, expect = options.expect.rdma]() -> Result<TaskOutput> {
    auto env = NewRootedEnv(root);
    rdma::Scan scan = rdma::ScanDevices(*env);
    TaskOutput out;
    rdma::CheckScan(scan, expect, out.findings);
    Families fam;
    RdmaFamilies(scan, fam);
    out.families = fam.Take();
    out.fabric_facts = k8s::EncodeFabricFacts(CollectFabricFacts(scan, *env));
    return out;
  };
  return t;
}

TaskSpec GpuTask(const std::string& root, const node::Options& options) {
  TaskSpec t;
  t.name = "gpu";
  t.checks = {gpu::kCount, gpu::kNvml, gpu::kNicAffinity};
  // True while an NVML call has not returned: a wedged driver is asked once, not every run.
  auto nvml_busy = std::make_shared<std::atomic<bool>>(false);
  t.run = [root, options, nvml_busy]() -> Result<TaskOutput> {
    auto env = NewRootedEnv(root);
    node::Inventory inv;
    inv.gpus = gpu::ScanGpus(*env);
    inv.rdma = rdma::ScanDevices(*env);
    inv.affinity = node::ComputeAffinity(inv.gpus, inv.rdma);
    if (root == "/" || options.nvml_library_explicit) {
      std::vector<std::string> addresses;
      for (const auto& g : inv.gpus.gpus) addresses.push_back(g.pci_address);
      if (nvml_busy->exchange(true)) {
        inv.gpus.nvml.status = "timeout";
        inv.gpus.nvml.library = options.nvml_library;
        inv.gpus.nvml.detail = "an earlier NVML call has not returned (the GPU driver may be hung)";
      } else {
        inv.gpus.nvml = gpu::QueryNvml(options.nvml_library, addresses, options.nvml_timeout,
                                       [nvml_busy] { nvml_busy->store(false); });
      }
    }
    TaskOutput out;
    gpu::CheckScan(inv.gpus, options.expect.gpus, out.findings);
    node::CheckAffinity(inv.affinity, inv.gpus, inv.rdma, out.findings);
    Families fam;
    GpuFamilies(inv, fam);
    out.families = fam.Take();
    return out;
  };
  return t;
}

TaskSpec StorageTask(const std::string& root, const node::Options& options) {
  TaskSpec t;
  t.name = "storage";
  t.checks = {storage::kMountMissing, storage::kMountType, storage::kLustreImportState};
  t.run = [root, mounts = options.expect.mounts]() -> Result<TaskOutput> {
    auto env = NewRootedEnv(root);
    storage::Scan scan = storage::ScanStorage(*env);
    TaskOutput out;
    storage::CheckScan(scan, mounts, out.findings);
    Families fam;
    StorageFamilies(scan, fam);
    out.families = fam.Take();
    return out;
  };
  return t;
}

}  // namespace tocsin::agent
