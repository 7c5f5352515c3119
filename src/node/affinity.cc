#include "node/affinity.h"

#include <fmt/format.h>

#include "gpu/catalog.h"

namespace tocsin::node {

std::vector<GpuAffinity> ComputeAffinity(const gpu::Scan& gpus, const rdma::Scan& rdma) {
  std::vector<GpuAffinity> out;
  for (const auto& g : gpus.gpus) {
    if (!g.pci) continue;
    GpuAffinity a;
    a.gpu = g.pci_address;
    a.gpu_numa = g.pci->numa_node;
    for (const auto& d : rdma.devices) {
      if (!d.pci) continue;
      PciPathType t = ClassifyPciPath(*g.pci, *d.pci);
      if (a.nic.empty() || static_cast<int>(t) < static_cast<int>(a.path)) {
        a.nic = d.name;
        a.nic_numa = d.pci->numa_node;
        a.path = t;
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

void CheckAffinity(const std::vector<GpuAffinity>& affinity, const gpu::Scan& gpus,
                   const rdma::Scan& rdma, std::vector<Finding>& out) {
  if (rdma.devices.empty() || gpus.gpus.empty()) return;  // nothing to be close to
  for (const auto& g : gpus.gpus) {
    if (!g.pci) {
      for (const auto& i : g.issues) {
        if (i.field == "device") {
          out.push_back(UnknownFinding(gpu::kNicAffinity, g.pci_address, i.path, i.error));
        }
      }
    }
  }
  for (const auto& a : affinity) {
    if (a.nic.empty()) {
      out.push_back({.check = gpu::kNicAffinity,
                     .severity = Severity::kWarning,
                     .subject = a.gpu,
                     .message = "no RDMA NIC has a readable PCI location to compare with",
                     .evidence = {{"result", "unknown"}}});
      continue;
    }
    if (SharesPcieSwitch(a.path)) continue;
    nlohmann::json evidence = {{"gpu_numa_node", a.gpu_numa},
                               {"nearest_nic", a.nic},
                               {"nic_numa_node", a.nic_numa},
                               {"path_type", PciPathTypeName(a.path)}};
    Finding f{.check = gpu::kNicAffinity,
              .severity = Severity::kWarning,
              .subject = a.gpu,
              .message = "",
              .evidence = evidence};
    switch (a.path) {
      case PciPathType::kSys:
        f.severity = Severity::kError;
        f.message = fmt::format(
            "no RDMA NIC on this GPU's NUMA node {}: the nearest, {}, is on NUMA node {} (SYS); "
            "GPUDirect RDMA traffic crosses the inter-socket link",
            a.gpu_numa, a.nic, a.nic_numa);
        break;
      case PciPathType::kNode:
      case PciPathType::kPhb:
        f.message = fmt::format(
            "no RDMA NIC under this GPU's PCIe switch: the nearest, {}, is on the same NUMA node "
            "but only through the host bridge ({}); NCCL does not use GPUDirect RDMA at that "
            "distance by default",
            a.nic, PciPathTypeName(a.path));
        break;
      default:
        f.severity = Severity::kInfo;
        f.message = fmt::format(
            "cannot tell whether {} is near this GPU: NUMA node unknown and no shared PCIe "
            "switch",
            a.nic);
        break;
    }
    out.push_back(std::move(f));
  }
}

nlohmann::json ToJson(const std::vector<GpuAffinity>& affinity) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : affinity) {
    out.push_back({{"gpu", a.gpu},
                   {"gpu_numa_node", a.gpu_numa},
                   {"nearest_nic", a.nic.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.nic)},
                   {"nic_numa_node", a.nic_numa},
                   {"path_type", PciPathTypeName(a.path)}});
  }
  return out;
}

}  // namespace tocsin::node
