// CNI network configurations (a NetworkAttachmentDefinition's spec.config).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "k8s/cni.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config =
      tocsin::k8s::ParseCniConfig(std::string_view(reinterpret_cast<const char*>(data), size));
  if (config.ok() && config->type.size() > size) __builtin_trap();
  return 0;
}
