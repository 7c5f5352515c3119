#pragma once

#include <string_view>
#include <vector>

#include "base/finding.h"

namespace tocsin::testing {

// The findings of one check id, in their order.
inline std::vector<Finding> FindingsOf(const std::vector<Finding>& all, std::string_view check) {
  std::vector<Finding> out;
  for (const auto& f : all) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

}  // namespace tocsin::testing
