// Every /sys/class/infiniband attribute parser on arbitrary text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rdma/sysfs_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tocsin::rdma::ParseCodedState(text);
  tocsin::rdma::ParseRate(text);
  for (const char* name : {"symbol_error", "link_downed", "local_link_integrity_errors",
                           "port_xmit_data", "unknown_counter"}) {
    tocsin::rdma::ParseCounter(name, text);
  }
  auto gid = tocsin::rdma::ParseGid(text);
  if (gid.ok()) tocsin::rdma::IsZeroGid(*gid);
  tocsin::rdma::ParseGuid(text);
  return 0;
}
