#pragma once

// Helpers for tests of the nccl library.
#include <string>

#include "nccl/analyzer.h"

namespace tocsin::nccl::testing {

// Everything an analysis concluded (its inventory and findings) as text: two analyses of the
// same log, read in different ways, must give the same.
inline std::string AnalysisText(const Analyzer& a) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : a.Findings()) {
    findings.push_back({f.check, f.subject, f.message, f.evidence});
  }
  return a.Inventory().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
         findings.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tocsin::nccl::testing
