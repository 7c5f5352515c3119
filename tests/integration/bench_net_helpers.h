#pragma once
// What the `tocsin bench net` end-to-end tests share (bench_net_cli_test.cc,
// bench_net_verdict_test.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_binary.h"

namespace tocsin::bench_net_test {

inline const std::vector<std::string> kAllTests = {"-t", "p2p",       "-t", "allreduce",
                                                   "-t", "allgather", "-t", "alltoall"};

inline std::vector<std::string> Args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"bench", "net", "-o", "json"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

inline std::string ReadFile(const std::string& path) {
  testing::RunResult r = testing::RunBinary("cat", {path});
  EXPECT_EQ(r.exit_code, 0) << path << ": " << r.err;
  return r.out;
}

// Every test ran, every row was verified with no wrong element.
inline void ExpectCorrect(const nlohmann::json& report, const std::vector<std::string>& tests) {
  for (const auto& t : tests) {
    const auto& rows = report["inventory"]["tests"][t]["rows"];
    ASSERT_FALSE(rows.empty()) << t << report.dump(1);
    for (const auto& r : rows) {
      EXPECT_EQ(r["wrong"], 0) << t << " " << r.dump();
      EXPECT_GT(r["busbw_gbps"].get<double>(), 0) << t;
    }
  }
}

}  // namespace tocsin::bench_net_test
