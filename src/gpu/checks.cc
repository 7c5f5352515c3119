#include "gpu/checks.h"

#include <fmt/format.h>

#include "gpu/catalog.h"

namespace tocsin::gpu {

void CheckScan(const Scan& scan, std::optional<int> expected, std::vector<Finding>& out) {
  if (scan.error) {
    out.push_back(UnknownFinding(kCount, "node", scan.error->path, scan.error->error));
    return;
  }
  int found = static_cast<int>(scan.gpus.size());
  nlohmann::json addresses = nlohmann::json::array();
  for (const auto& g : scan.gpus) addresses.push_back(g.pci_address);
  if (expected && found != *expected) {
    out.push_back(
        {.check = kCount,
         .severity = found < *expected ? Severity::kError : Severity::kWarning,
         .subject = "node",
         .message = fmt::format("expected {} GPUs, found {} on the PCI bus", *expected, found),
         .evidence = {{"expected", *expected}, {"found", found}, {"pci_addresses", addresses}}});
  } else if (!expected && found == 0) {
    out.push_back({.check = kCount,
                   .severity = Severity::kInfo,
                   .subject = "node",
                   .message = "no NVIDIA GPUs on the PCI bus",
                   .evidence = {{"found", 0}}});
  }
  if (scan.nvml.status == "ok" && scan.nvml.device_count &&
      static_cast<int>(*scan.nvml.device_count) < found) {
    nlohmann::json unseen = nlohmann::json::array();
    for (const auto& [address, dev] : scan.nvml.devices) {
      if (!dev.error.empty()) unseen.push_back({{"pci_address", address}, {"error", dev.error}});
    }
    out.push_back(
        {.check = kCount,
         .severity = Severity::kError,
         .subject = "node",
         .message = fmt::format("{} GPUs on the PCI bus but NVML sees {}: the driver cannot use "
                                "every GPU",
                                found, *scan.nvml.device_count),
         .evidence = {{"pci_gpus", found},
                      {"nvml_device_count", *scan.nvml.device_count},
                      {"not_found_by_nvml", unseen}}});
  }
  if (scan.nvml.status == "timeout" || scan.nvml.status == "error") {
    out.push_back({.check = kNvml,
                   .severity = Severity::kWarning,
                   .subject = "node",
                   .message = "NVML " + scan.nvml.status + ": " + scan.nvml.detail,
                   .evidence = {{"library", scan.nvml.library}, {"status", scan.nvml.status}}});
  }
}

}  // namespace tocsin::gpu
