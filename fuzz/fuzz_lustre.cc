// Lustre client files: import, state history, stats.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/lustre.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tocsin::storage::ParseLustreImport(text);
  auto state = tocsin::storage::ParseLustreState(text);
  if (state.ok()) tocsin::storage::UnhealthySince(*state);
  tocsin::storage::ParseLustreStats(text);
  return 0;
}
