#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml.h"
#include "sys/env.h"
#include "sys/pci.h"
#include "sys/read_issue.h"

namespace tocsin::gpu {

inline constexpr uint64_t kNvidiaVendor = 0x10de;

// An NVIDIA display-class (0x03xxxx: VGA or 3D controller) PCI function. NVSwitches and audio
// functions of the same vendor have other classes and are not GPUs.
struct Gpu {
  std::string pci_address;
  std::string device_id;   // "0x2330"
  std::string class_code;  // "0x030200"
  std::optional<PciLocation> pci;
  std::vector<ReadIssue> issues;
};

struct Scan {
  std::vector<Gpu> gpus;
  std::optional<ReadIssue> error;
  NvmlInfo nvml;
};

// Scans /sys/bus/pci/devices. NVML is queried separately (QueryNvml) and stored in `nvml`.
Scan ScanGpus(Env& env);

nlohmann::json ToJson(const Scan& scan);

}  // namespace tocsin::gpu
