#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace tocsin {

// A host file that could not be read or parsed; inventories keep them so that the check that
// needed the value can report "unknown" with the path instead of a silent default.
struct ReadIssue {
  std::string field;  // "state", "rate", "counters/symbol_error", ...
  std::string path;
  Status error;
};

inline nlohmann::json ToJson(const std::vector<ReadIssue>& issues) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : issues) {
    out.push_back({{"field", i.field}, {"path", i.path}, {"error", i.error.ToString()}});
  }
  return out;
}

}  // namespace tocsin
