// Prometheus's /api/v1/query_range and /api/v1/query answers, as `tocsin job` reads them: what
// a Prometheus (or whatever answers at --prometheus) sends is hostile input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jobview/prom_response.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tocsin::jobview::ResponseLimits limits;
  limits.max_series = 8;
  limits.max_points = 16;
  limits.max_total_points = 64;
  limits.max_labels = 4;
  limits.max_label_bytes = 16;
  auto r = tocsin::jobview::ParseQueryResponse(
      std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (r.ok()) {
    size_t total = 0;
    for (const auto& s : r->series) {
      if (s.labels.size() > limits.max_labels || s.points.size() > limits.max_points)
        __builtin_trap();
      for (size_t i = 1; i < s.points.size(); ++i) {
        if (!(s.points[i].t > s.points[i - 1].t)) __builtin_trap();
      }
      total += s.points.size();
    }
    if (r->series.size() > limits.max_series || total > limits.max_total_points) __builtin_trap();
  }
  return 0;
}
