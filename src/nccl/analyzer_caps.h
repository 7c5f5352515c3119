#pragma once

// The analyzer's caps and the small text helpers its files share (analyzer.cc, process.cc).
#include <cstddef>
#include <string_view>

#include "nccl/analyzer.h"

namespace tocsin::nccl::internal {

constexpr size_t kMaxListItems = 64;
constexpr size_t kMaxWarnings = 20;
constexpr size_t kEntryBytes = 48;  // a list entry's or tree node's own overhead, roughly

inline std::string_view Cut(std::string_view s) { return s.substr(0, kMaxTextBytes); }

// What keeping a WARN text takes.
inline size_t WarningBytes(std::string_view text) {
  return sizeof(Warning) + text.size() + kEntryBytes;
}

inline bool SameText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace tocsin::nccl::internal
