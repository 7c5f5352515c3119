#include "bench/latency.h"

#include <algorithm>
#include <cmath>

namespace tocsin::bench {

Percentiles ComputePercentiles(std::vector<int64_t>& ns) {
  Percentiles p;
  if (ns.empty()) return p;
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    size_t rank = static_cast<size_t>(std::ceil(q * ns.size()));
    return ns[std::min(ns.size() - 1, rank == 0 ? 0 : rank - 1)] / 1e3;
  };
  double sum = 0;
  for (int64_t v : ns) sum += v;
  p.count = ns.size();
  p.mean = sum / ns.size() / 1e3;
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.p999 = at(0.999);
  p.max = ns.back() / 1e3;
  return p;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

nlohmann::json ToJson(const Percentiles& p) {
  return {{"count", p.count}, {"mean_us", p.mean}, {"p50_us", p.p50}, {"p90_us", p.p90},
          {"p99_us", p.p99},  {"p999_us", p.p999}, {"max_us", p.max}};
}

}  // namespace tocsin::bench
