#include "sys/pci.h"

#include "base/strings.h"

namespace tocsin {
namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool IsHostBridge(std::string_view s) {
  // "pci0000:00" (domain:bus); some platforms use longer domains ("pci10000:00").
  if (s.substr(0, 3) != "pci") return false;
  auto parts = Split(s.substr(3), ':');
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) return false;
  for (auto p : parts) {
    for (char c : p) {
      if (!IsHex(c)) return false;
    }
  }
  return true;
}

}  // namespace

bool IsPciAddress(std::string_view s) {
  // dddd:bb:dd.f (domain may be longer than 4 digits on VMD/Hyper-V platforms)
  size_t dot = s.rfind('.');
  if (dot == std::string_view::npos || dot + 2 != s.size() || !IsHex(s.back())) return false;
  auto parts = Split(s.substr(0, dot), ':');
  if (parts.size() != 3 || parts[0].size() < 4 || parts[1].size() != 2 || parts[2].size() != 2) {
    return false;
  }
  for (auto p : parts) {
    for (char c : p) {
      if (!IsHex(c)) return false;
    }
  }
  return true;
}

Result<PciLocation> ParsePciDevicePath(std::string_view sysfs_path) {
  PciLocation loc;
  bool in_tree = false;
  for (auto comp : Split(sysfs_path, '/', true)) {
    if (IsHostBridge(comp)) {
      loc.host_bridge = std::string(comp);
      loc.path.clear();
      in_tree = true;
    } else if (in_tree && IsPciAddress(comp)) {
      loc.path.emplace_back(comp);
    } else if (in_tree && !loc.path.empty()) {
      // Below the deepest PCI function (virtio2, net/eth0, infiniband/mlx5_0): stop.
      break;
    }
  }
  if (loc.host_bridge.empty() || loc.path.empty()) {
    return Status::NotFound(std::string(sysfs_path) + ": not a PCI device");
  }
  loc.address = loc.path.back();
  return loc;
}

Result<PciLocation> ResolvePciDevice(Env& env, std::string_view device_link) {
  TOCSIN_ASSIGN_OR_RETURN(std::string real, env.RealPath(device_link));
  TOCSIN_ASSIGN_OR_RETURN(PciLocation loc, ParsePciDevicePath(real));
  // numa_node lives in the PCI function's directory.
  size_t at = real.find(loc.address);
  std::string dir = real.substr(0, at + loc.address.size());
  auto numa = ReadAttribute(env, dir + "/numa_node");
  if (numa.ok()) {
    auto n = ParseInt64(*numa);
    if (!n || *n < -1) {
      return Status::ParseError(dir + "/numa_node: expected an integer, got " + Quote(*numa));
    }
    loc.numa_node = static_cast<int>(*n);
  }
  return loc;
}

std::string_view PciPathTypeName(PciPathType t) {
  switch (t) {
    case PciPathType::kPix:
      return "PIX";
    case PciPathType::kPxb:
      return "PXB";
    case PciPathType::kPhb:
      return "PHB";
    case PciPathType::kNode:
      return "NODE";
    case PciPathType::kSys:
      return "SYS";
    case PciPathType::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

PciPathType ClassifyPciPath(const PciLocation& a, const PciLocation& b) {
  if (a.host_bridge != b.host_bridge) {
    if (a.numa_node < 0 || b.numa_node < 0) return PciPathType::kUnknown;
    return a.numa_node == b.numa_node ? PciPathType::kNode : PciPathType::kSys;
  }
  size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common]) {
    ++common;
  }
  if (common == 0) return PciPathType::kPhb;
  // NCCL counts a PCIe switch (upstream port + its downstream ports) as one hop: two devices
  // whose paths diverge at most two levels above each of them (device <- downstream port <-
  // shared upstream port) sit under one switch.
  size_t below_a = a.path.size() - common;
  size_t below_b = b.path.size() - common;
  return (below_a <= 2 && below_b <= 2) ? PciPathType::kPix : PciPathType::kPxb;
}

}  // namespace tocsin
