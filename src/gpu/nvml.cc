#include "gpu/nvml.h"

#include <dlfcn.h>

#include <memory>

#include "sys/bounded_call.h"

namespace tocsin::gpu {
namespace {

// The few NVML entry points we call (nvml.h, stable since NVML 5.x / driver 319+).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlStringSize = 96;

// nvmlUtilization_t and nvmlMemory_t (v1) of nvml.h.
struct NvmlUtilization {
  unsigned gpu;
  unsigned memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlApi {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*driver_version)(char*, unsigned);
  nvmlReturn_t (*count)(unsigned*);
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  // Optional: older or stub libraries may lack them.
  nvmlReturn_t (*utilization)(nvmlDevice_t, NvmlUtilization*);
  nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory*);
};

template <typename F>
bool Load(void* lib, const char* symbol, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (out == nullptr) missing = symbol;
  return out != nullptr;
}

std::string ErrorText(const NvmlApi& api, nvmlReturn_t rc) {
  const char* s = api.error_string ? api.error_string(rc) : nullptr;
  return (s ? std::string(s) : "NVML error") + " (" + std::to_string(rc) + ")";
}

NvmlInfo QueryBlocking(const std::string& library, const std::vector<std::string>& addresses) {
  NvmlInfo info;
  info.library = library;
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    info.status = "absent";
    const char* err = dlerror();
    info.detail = err ? err : ("cannot load " + library);
    return info;
  }
  NvmlApi api{};
  std::string missing;
  bool ok = Load(lib, "nvmlInit_v2", api.init, missing) &&
            Load(lib, "nvmlShutdown", api.shutdown, missing) &&
            Load(lib, "nvmlErrorString", api.error_string, missing) &&
            Load(lib, "nvmlSystemGetDriverVersion", api.driver_version, missing) &&
            Load(lib, "nvmlDeviceGetCount_v2", api.count, missing) &&
            Load(lib, "nvmlDeviceGetHandleByPciBusId_v2", api.by_pci, missing) &&
            Load(lib, "nvmlDeviceGetName", api.name, missing) &&
            Load(lib, "nvmlDeviceGetUUID", api.uuid, missing);
  api.utilization =
      reinterpret_cast<decltype(api.utilization)>(dlsym(lib, "nvmlDeviceGetUtilizationRates"));
  api.memory = reinterpret_cast<decltype(api.memory)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  if (!ok) {
    info.status = "error";
    info.detail = library + " has no symbol " + missing;
    return info;  // keep the library loaded: harmless, and symbols may be in use elsewhere
  }
  nvmlReturn_t rc = api.init();
  if (rc != kNvmlSuccess) {
    info.status = "error";
    info.detail = "nvmlInit_v2: " + ErrorText(api, rc);
    return info;
  }
  char buf[kNvmlStringSize] = {};
  if (api.driver_version(buf, sizeof(buf)) == kNvmlSuccess) info.driver_version = buf;
  unsigned count = 0;
  if (api.count(&count) == kNvmlSuccess) info.device_count = count;
  for (const auto& address : addresses) {
    NvmlDevice dev;
    nvmlDevice_t handle = nullptr;
    rc = api.by_pci(address.c_str(), &handle);
    if (rc != kNvmlSuccess) {
      dev.error = "nvmlDeviceGetHandleByPciBusId_v2(" + address + "): " + ErrorText(api, rc);
    } else {
      char name[kNvmlStringSize] = {};
      char uuid[kNvmlStringSize] = {};
      if (api.name(handle, name, sizeof(name)) == kNvmlSuccess) dev.name = name;
      if (api.uuid(handle, uuid, sizeof(uuid)) == kNvmlSuccess) dev.uuid = uuid;
      NvmlUtilization util{};
      if (api.utilization && api.utilization(handle, &util) == kNvmlSuccess) {
        dev.utilization_gpu = util.gpu;
        dev.utilization_memory = util.memory;
      }
      NvmlMemory mem{};
      if (api.memory && api.memory(handle, &mem) == kNvmlSuccess) {
        dev.memory_total = mem.total;
        dev.memory_used = mem.used;
      }
    }
    info.devices[address] = dev;
  }
  api.shutdown();
  info.status = "ok";
  return info;
}

}  // namespace

NvmlInfo QueryNvml(const std::string& library, const std::vector<std::string>& pci_addresses,
                   std::chrono::milliseconds timeout, std::function<void()> on_return) {
  auto info = sys::BoundedCall(timeout, [library, pci_addresses, on_return] {
    NvmlInfo answer = QueryBlocking(library, pci_addresses);
    if (on_return) on_return();
    return answer;
  });
  if (info) return std::move(*info);
  NvmlInfo stuck;  // in the driver; the process exits without it
  stuck.status = "timeout";
  stuck.library = library;
  stuck.detail = "NVML did not answer within " + std::to_string(timeout.count()) +
                 " ms (the GPU driver may be hung)";
  return stuck;
}

nlohmann::json ToJson(const NvmlInfo& info) {
  nlohmann::json out = {
      {"status", info.status},
      {"detail", info.detail},
      {"library", info.library},
      {"driver_version", info.driver_version},
      {"device_count", info.device_count ? nlohmann::json(*info.device_count) : nullptr}};
  return out;
}

}  // namespace tocsin::gpu
