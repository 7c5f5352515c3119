#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tocsin::jobview {

// One sample: Unix seconds and value (NaN and infinities kept as Prometheus sends them).
struct Point {
  double t = 0;
  double v = 0;
};

struct Series {
  std::map<std::string, std::string> labels;
  std::vector<Point> points;  // strictly increasing t
};

// What was left out of a response at the caps or because it was malformed; never silent: the
// report carries these counts.
struct Drops {
  size_t series = 0;  // over max_series, too many or too long labels, not an object
  size_t points = 0;  // over max_points, a timestamp not after the last, a value not a number
  Drops& operator+=(const Drops& o) {
    series += o.series;
    points += o.points;
    return *this;
  }
  size_t total() const { return series + points; }
};

struct ResponseLimits {
  size_t max_series = 20000;  // 512 nodes x 12 processes with room
  size_t max_points = 11000;  // per series: Prometheus's own limit per query_range
  size_t max_total_points = 4000000;
  size_t max_labels = 32;         // per series
  size_t max_label_bytes = 1024;  // per name and per value
};

struct QueryResult {
  std::vector<Series> series;
  Drops drops;
};

// The body of /api/v1/query_range (resultType "matrix") or /api/v1/query ("vector", one point
// per series), which a Prometheus, or whatever answers in its place, controls: hostile input.
// A body that is not such a document, or says status "error", is an error quoting its errorType
// and error; series and points beyond `limits` or malformed are counted in drops and left out.
Result<QueryResult> ParseQueryResponse(std::string_view body, const ResponseLimits& limits = {});

}  // namespace tocsin::jobview
