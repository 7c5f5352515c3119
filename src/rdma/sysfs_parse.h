#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tocsin::rdma {

// Pure parsers for /sys/class/infiniband attribute text (drivers/infiniband/core/sysfs.c).

// "%d: %s" as in ports/<p>/state ("4: ACTIVE"), phys_state ("5: LinkUp"), node_type ("1: CA").
struct CodedState {
  int code = 0;
  std::string name;
};
Result<CodedState> ParseCodedState(std::string_view text);

inline constexpr int kPortActive = 4;
inline constexpr int kPhysLinkUp = 5;
inline constexpr int kPhysDisabled = 3;

// "%d%s Gb/sec (%dX%s)": "200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)".
struct LinkRate {
  double gbps = 0;
  int width = 0;      // lanes; 0 when not printed
  std::string speed;  // "HDR", "NDR", ...; empty when not printed
};
Result<LinkRate> ParseRate(std::string_view text);

// A PMA counter file: one decimal number, or "N/A (no PMA)". Counters narrower than 64 bits
// saturate at their maximum; such a value means "at least".
struct CounterValue {
  std::optional<uint64_t> value;  // nullopt when there is no PMA
  bool saturated = false;
};
Result<CounterValue> ParseCounter(std::string_view name, std::string_view text);

// Width in bits of a port counter (PORT_PMA_ATTR in the kernel); 64 for unknown names.
int CounterWidthBits(std::string_view name);

// "%pI6": eight groups of four lowercase hex digits.
Result<std::string> ParseGid(std::string_view text);
bool IsZeroGid(std::string_view gid);

// node_guid / sys_image_guid: "%04x:%04x:%04x:%04x".
Result<std::string> ParseGuid(std::string_view text);

}  // namespace tocsin::rdma
