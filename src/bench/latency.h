#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace tocsin::bench {

// Latency percentiles of one phase, in microseconds (nearest-rank, as fio's clat percentiles).
struct Percentiles {
  uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
};

// `samples_ns` is sorted in place.
Percentiles ComputePercentiles(std::vector<int64_t>& samples_ns);
nlohmann::json ToJson(const Percentiles& p);

// The median (the mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> values);

}  // namespace tocsin::bench
