// The agent's fabric facts node annotation (tocsin.io/fabric), as `tocsin diff` reads it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "k8s/fabric_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto facts =
      tocsin::k8s::DecodeFabricFacts(std::string_view(reinterpret_cast<const char*>(data), size));
  if (facts.ok()) (void)tocsin::k8s::DecodeFabricFacts(tocsin::k8s::EncodeFabricFacts(*facts));
  return 0;
}
