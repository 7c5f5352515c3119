// --profile YAML.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "node/expectations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tocsin::node::ParseProfile(text, "fuzz.yaml");
  return 0;
}
