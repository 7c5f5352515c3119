// /proc/self/mountinfo and /proc/mounts, and the Lustre source of every mount found.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/lustre.h"
#include "storage/mounts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& table :
       {tocsin::storage::ParseMountInfo(text), tocsin::storage::ParseProcMounts(text)}) {
    for (const auto& m : table.mounts) {
      tocsin::storage::ParseLustreSource(m.source);
      tocsin::storage::IsSharedMount(m);  // IsSharedFsType and IsLustreTarget
    }
    tocsin::storage::FindMount(table, "/mnt/lustre");
  }
  return 0;
}
