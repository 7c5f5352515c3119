#include "gpu/inventory.h"

#include "base/strings.h"

namespace tocsin::gpu {
namespace {

constexpr const char* kPciDir = "/sys/bus/pci/devices";

}  // namespace

Scan ScanGpus(Env& env) {
  Scan scan;
  auto names = env.ListDir(kPciDir);
  if (!names.ok()) {
    if (names.status().code() != StatusCode::kNotFound) {
      scan.error = ReadIssue{"pci devices", kPciDir, names.status()};
    }
    return scan;
  }
  for (const auto& name : *names) {
    std::string dir = std::string(kPciDir) + "/" + name;
    auto vendor = ReadAttribute(env, dir + "/vendor");
    if (!vendor.ok()) continue;  // not every entry is readable; only NVIDIA ones matter
    auto vendor_id = ParseHex(*vendor);
    if (!vendor_id || *vendor_id != kNvidiaVendor) continue;
    Gpu gpu;
    gpu.pci_address = name;
    auto cls = ReadAttribute(env, dir + "/class");
    if (!cls.ok()) {
      gpu.issues.push_back({"class", dir + "/class", cls.status()});
      scan.gpus.push_back(std::move(gpu));  // NVIDIA, class unknown: keep it, say why
      continue;
    }
    auto class_code = ParseHex(*cls);
    if (!class_code) {
      gpu.issues.push_back(
          {"class", dir + "/class",
           Status::ParseError(dir + "/class: expected 0x<hex>, got " + Quote(*cls))});
      scan.gpus.push_back(std::move(gpu));
      continue;
    }
    if ((*class_code >> 16) != 0x03) continue;  // NVSwitch (0x0680), audio (0x0403), ...
    gpu.class_code = *cls;
    gpu.device_id = ReadAttribute(env, dir + "/device").value_or("");
    auto pci = ResolvePciDevice(env, dir);
    if (pci.ok()) {
      gpu.pci = *pci;
    } else {
      gpu.issues.push_back({"device", dir, pci.status()});
    }
    scan.gpus.push_back(std::move(gpu));
  }
  return scan;
}

nlohmann::json ToJson(const Scan& scan) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : scan.gpus) {
    nlohmann::json j = {
        {"pci_address", g.pci_address},
        {"device_id", g.device_id},
        {"class", g.class_code},
        {"numa_node", g.pci ? nlohmann::json(g.pci->numa_node) : nullptr},
        {"pcie_path", g.pci ? nlohmann::json(g.pci->path) : nullptr},
        {"model", nullptr},
        {"uuid", nullptr},
        {"read_errors", ToJson(g.issues)},
    };
    auto it = scan.nvml.devices.find(g.pci_address);
    if (it != scan.nvml.devices.end()) {
      if (!it->second.name.empty()) j["model"] = it->second.name;
      if (!it->second.uuid.empty()) j["uuid"] = it->second.uuid;
      if (!it->second.error.empty()) j["nvml_error"] = it->second.error;
    }
    gpus.push_back(std::move(j));
  }
  nlohmann::json out = {
      {"count", scan.gpus.size()}, {"devices", gpus}, {"nvml", ToJson(scan.nvml)}};
  if (scan.error) out["read_errors"] = ToJson(std::vector<ReadIssue>{*scan.error});
  return out;
}

}  // namespace tocsin::gpu
