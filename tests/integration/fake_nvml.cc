// A stand-in for libnvidia-ml.so.1 with only the entry points tocsin calls. Behaviour is set
// through the environment so one library serves every test:
//   FAKE_NVML_MISSING=<pci address>  that GPU is not found (and the device count is one less)
//   FAKE_NVML_HANG=1                 nvmlInit_v2 never returns (a wedged driver)
//   FAKE_NVML_INIT_ERROR=1           nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED (9)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kSuccess = 0;
constexpr int kNotFound = 6;
constexpr int kDriverNotLoaded = 9;
constexpr unsigned kPciGpus = 8;

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void Copy(const std::string& s, char* out, unsigned len) {
  std::snprintf(out, len, "%s", s.c_str());
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (std::strcmp(Env("FAKE_NVML_HANG"), "1") == 0) {
    while (true) pause();
  }
  return std::strcmp(Env("FAKE_NVML_INIT_ERROR"), "1") == 0 ? kDriverNotLoaded : kSuccess;
}

int nvmlShutdown() { return kSuccess; }

const char* nvmlErrorString(int rc) {
  switch (rc) {
    case kNotFound:
      return "Not Found";
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char* out, unsigned len) {
  Copy("550.54.15", out, len);
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = kPciGpus - (*Env("FAKE_NVML_MISSING") ? 1 : 0);
  return kSuccess;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** handle) {
  if (std::strcmp(bus_id, Env("FAKE_NVML_MISSING")) == 0) return kNotFound;
  // The handle remembers its address: one static slot per address, as NVML's handles are
  // valid until nvmlShutdown and never freed by the caller.
  static char slots[kPciGpus * 2][32];
  static unsigned used = 0;
  for (unsigned i = 0; i < used; ++i) {
    if (std::strcmp(slots[i], bus_id) == 0) {
      *handle = slots[i];
      return kSuccess;
    }
  }
  if (used == kPciGpus * 2) return kNotFound;
  std::snprintf(slots[used], sizeof(slots[used]), "%s", bus_id);
  *handle = slots[used++];
  return kSuccess;
}

int nvmlDeviceGetName(void* handle, char* out, unsigned len) {
  (void)handle;
  Copy("NVIDIA H100 80GB HBM3", out, len);
  return kSuccess;
}

int nvmlDeviceGetUUID(void* handle, char* out, unsigned len) {
  Copy(std::string("GPU-fake-") + static_cast<const char*>(handle), out, len);
  return kSuccess;
}

// Deterministic readings a test can check: GPU utilisation 87 %, memory controller 40 %,
// 80 GiB of which 10 GiB used.
struct Utilization {
  unsigned gpu;
  unsigned memory;
};
struct Memory {
  unsigned long long total, free, used;
};

int nvmlDeviceGetUtilizationRates(void* handle, Utilization* out) {
  (void)handle;
  *out = {87, 40};
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(void* handle, Memory* out) {
  (void)handle;
  *out = {80ull << 30, 70ull << 30, 10ull << 30};
  return kSuccess;
}

}  // extern "C"
