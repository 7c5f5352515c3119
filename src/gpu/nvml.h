#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tocsin::gpu {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

struct NvmlDevice {
  std::string name;
  std::string uuid;
  std::string error;  // why this GPU could not be looked up; empty when it was
  // nvmlDeviceGetUtilizationRates (percent over the driver's last sample period) and
  // nvmlDeviceGetMemoryInfo (bytes); nullopt when the driver does not say.
  std::optional<unsigned> utilization_gpu, utilization_memory;
  std::optional<uint64_t> memory_total, memory_used;
};

struct NvmlInfo {
  // "ok", "absent" (library not loadable), "error" (init failed), "timeout" (NVML did not
  // answer in time: a wedged driver), "skipped" (not asked, e.g. --root is a fixture).
  std::string status = "skipped";
  std::string detail;
  std::string library;
  std::string driver_version;
  std::optional<unsigned> device_count;
  std::map<std::string, NvmlDevice> devices;  // by sysfs PCI address
};

// dlopens `library`, initialises NVML and looks up each PCI address. Runs on a worker thread:
// if NVML does not answer within `timeout`, returns status "timeout" and abandons the thread.
// `on_return`, when given, runs on the worker thread once NVML has returned, even long after a
// timeout (a caller that repeats the query must not pile up threads on a wedged driver).
NvmlInfo QueryNvml(const std::string& library, const std::vector<std::string>& pci_addresses,
                   std::chrono::milliseconds timeout, std::function<void()> on_return = nullptr);

nlohmann::json ToJson(const NvmlInfo& info);

}  // namespace tocsin::gpu
