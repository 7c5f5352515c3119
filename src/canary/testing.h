#pragma once

// Test helpers for the canary library (tests and the benchmark only).

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "canary/history.h"

namespace tocsin::canary::testing {

inline constexpr std::chrono::seconds kWindow{3600};

inline TimePoint T(int64_t seconds) { return FromUnixSeconds(1796000000 + seconds); }

// `blocks` blocks "b00".. of `per_block` nodes "n-00-00"..
inline std::vector<NodeInfo> Grid(size_t blocks, size_t per_block) {
  std::vector<NodeInfo> nodes;
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < per_block; ++i) {
      nodes.push_back({fmt::format("n-{:02}-{:02}", b, i), fmt::format("b{:02}", b)});
    }
  }
  return nodes;
}

inline PairResult Result(const NodeInfo& a, const NodeInfo& b, Outcome outcome, TimePoint at,
                         std::string cause = "", std::string node = "") {
  return {a.name, b.name, a.block, b.block, outcome, std::move(cause), std::move(node), at};
}
inline PairResult Pass(const NodeInfo& a, const NodeInfo& b, TimePoint at) {
  return Result(a, b, Outcome::kPass, at);
}
inline PairResult Fail(const NodeInfo& a, const NodeInfo& b, TimePoint at,
                       std::string cause = "canary.transport.not-rdma") {
  return Result(a, b, Outcome::kPairFault, at, std::move(cause));
}

}  // namespace tocsin::canary::testing
