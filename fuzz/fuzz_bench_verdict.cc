// A canary's verdict (bench net --verdict-file), as the controller decodes it from a pod's
// termination message: never a crash, and what decodes encodes to a fixed point.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bench/verdict.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tocsin::bench::DecodeVerdict;
  using tocsin::bench::EncodeVerdict;
  auto first = DecodeVerdict(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!first.ok()) return 0;
  std::string once = EncodeVerdict(*first);
  if (once.size() > tocsin::bench::kMaxVerdictBytes) std::abort();
  auto second = DecodeVerdict(once);
  if (!second.ok()) std::abort();  // the encoder wrote something its decoder refuses
  // Encoded once, a verdict fits: decoding and encoding again changes nothing.
  if (EncodeVerdict(*second) != once) std::abort();
  // Nothing was trimmed on the way: every field survived as it was.
  if (second->trimmed == first->trimmed &&
      (second->tests.size() != first->tests.size() ||
       second->ranks.size() != first->ranks.size() ||
       second->findings.size() != first->findings.size() || second->error != first->error ||
       second->provider != first->provider || second->rdma != first->rdma)) {
    std::abort();
  }
  return 0;
}
