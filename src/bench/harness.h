#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/report.h"
#include "ranks/world.h"

namespace tocsin::bench {

// What the benchmarks (net, storage) share around their measurements: the report's header, the
// ranks they ran on, the failure of a rank, and the straggler check over ranks, pairs or nodes.

// A straggler check needs this many values: a median of two says nothing about either.
inline constexpr size_t kMinStragglerValues = 3;

struct Stragglers {
  double median = 0;
  std::vector<size_t> slow;  // indices of the values under `ratio` x the median, in order
};

// The values under `ratio` x their median; none when there are fewer than kMinStragglerValues.
Stragglers FindStragglers(const std::vector<double>& values, double ratio);

// A rank failed, went away, hung or sent malformed results: `check` is the benchmark's
// "<bench>.rank.failed" id; `culprit` the rank to blame ("" when unknown: the subject is "job");
// `reported_by_rank` the rank that writes this report.
Finding RankFailedFinding(const std::string& check, const std::string& reason, int reported_by_rank,
                          const std::string& culprit = "");

// A benchmark's report before anything is measured: command, host and time.
Report BenchReport(const std::string& command, const std::string& host);

// The ranks a run met on: the SETUP table (rank, host, IP; `note` under it) and the "ranks"
// inventory (with each rank's node name).
Table SetupTable(const std::vector<ranks::Peer>& peers, const std::string& note);
nlohmann::json RanksJson(const std::vector<ranks::Peer>& peers);

}  // namespace tocsin::bench
