#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/finding.h"
#include "gpu/inventory.h"
#include "rdma/inventory.h"
#include "sys/pci.h"

namespace tocsin::node {

// For each GPU, its closest RDMA NIC by PCIe topology, then NUMA node.
struct GpuAffinity {
  std::string gpu;  // PCI address
  int gpu_numa = -1;
  std::string nic;  // RDMA device name; empty when no NIC has a PCI location
  int nic_numa = -1;
  PciPathType path = PciPathType::kUnknown;
};

std::vector<GpuAffinity> ComputeAffinity(const gpu::Scan& gpus, const rdma::Scan& rdma);

// gpu.nic.affinity: error when the closest NIC is on another NUMA node (SYS), warning when it
// is on the same NUMA node but under no shared PCIe switch (PHB/NODE: GPUDirect RDMA is off by
// NCCL's default distance), info when NUMA is unknown.
void CheckAffinity(const std::vector<GpuAffinity>& affinity, const gpu::Scan& gpus,
                   const rdma::Scan& rdma, std::vector<Finding>& out);

nlohmann::json ToJson(const std::vector<GpuAffinity>& affinity);

}  // namespace tocsin::node
