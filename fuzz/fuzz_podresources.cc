// The kubelet's PodResources List answer (protobuf wire format), as the agent's pods task
// decodes it: written by device plugins and pod specs, so capped like hostile input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "podresources/list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tocsin::podresources::Limits limits;
  limits.max_pods = 4;
  limits.max_devices_per_pod = 3;
  limits.max_name_bytes = 16;
  limits.max_id_bytes = 16;
  auto r = tocsin::podresources::ParseListResponse(
      std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (r.ok()) {
    if (r->pods.size() > limits.max_pods) __builtin_trap();
    for (const auto& p : r->pods) {
      if (p.devices.size() > limits.max_devices_per_pod) __builtin_trap();
      if (p.name.empty() || p.name.size() > limits.max_name_bytes) __builtin_trap();
      for (const auto& d : p.devices) {
        if (d.id.empty() || d.id.size() > limits.max_id_bytes) __builtin_trap();
      }
    }
  }
  return 0;
}
