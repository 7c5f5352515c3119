// `tocsin agent --config` YAML, and the durations its values carry.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/time.h"
#include "cli/yaml_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto items = tocsin::cli::ParseYamlConfig(text, "fuzz.yaml");
  if (items.ok()) {
    for (const auto& [key, values] : *items) {
      for (const auto& v : values) {
        auto eq = v.find('=');
        tocsin::ParseDuration(eq == std::string::npos ? v : v.substr(eq + 1));
      }
    }
  }
  tocsin::ParseDuration(text);
  return 0;
}
