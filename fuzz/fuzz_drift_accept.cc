// `tocsin diff --accept FILE`: the accepted differences (YAML), applied to a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "drift/accept.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto accepted =
      tocsin::drift::ParseAcceptFile(std::string_view(reinterpret_cast<const char*>(data), size));
  if (accepted.ok()) {
    std::vector<tocsin::Finding> findings(1);
    findings[0].check = "drift.plugin.image";
    findings[0].subject = "device plugin x";
    tocsin::drift::ApplyAcceptances(findings, *accepted, tocsin::Clock::now());
  }
  return 0;
}
