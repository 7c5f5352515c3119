#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sys/env.h"

namespace tocsin {

// Where a device sits on the PCI tree, from its sysfs path
// (/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0).
struct PciLocation {
  std::string address;            // the device's own function, "0000:03:00.0"
  std::string host_bridge;        // "pci0000:00"
  std::vector<std::string> path;  // PCI functions from the root port down to `address`
  int numa_node = -1;             // -1: unknown ("no affinity"), as the kernel reports it
};

// True for "dddd:bb:dd.f" in hex.
bool IsPciAddress(std::string_view s);

// Pure: parses a canonical sysfs device path. The device is the deepest PCI function on the
// path, so a netdev under /sys/devices/pci0000:00/0000:00:03.0/virtio2 maps to 0000:00:03.0.
Result<PciLocation> ParsePciDevicePath(std::string_view sysfs_path);

// Resolves a `device` symlink (e.g. /sys/class/infiniband/mlx5_0/device) and reads numa_node.
// NotFound when the device is not on PCI (virtual devices).
Result<PciLocation> ResolvePciDevice(Env& env, std::string_view device_link);

// How two PCI devices are connected, in nvidia-smi/NCCL terms.
enum class PciPathType {
  kPix,      // through at most one PCIe switch
  kPxb,      // through several switches, without crossing the host bridge
  kPhb,      // through the PCIe host bridge (same root complex)
  kNode,     // different host bridges on the same NUMA node
  kSys,      // across NUMA nodes (the inter-socket link)
  kUnknown,  // different host bridges and NUMA unknown
};

std::string_view PciPathTypeName(PciPathType t);
PciPathType ClassifyPciPath(const PciLocation& a, const PciLocation& b);

// True when the two devices share a PCIe switch (PIX or PXB).
inline bool SharesPcieSwitch(PciPathType t) {
  return t == PciPathType::kPix || t == PciPathType::kPxb;
}

}  // namespace tocsin
