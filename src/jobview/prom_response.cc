#include "jobview/prom_response.h"

#include <simdjson.h>

#include <cmath>
#include <limits>

#include "base/strings.h"

namespace tocsin::jobview {
namespace {

namespace od = simdjson::ondemand;

Status Bad(std::string_view what) {
  return Status::InvalidArgument("Prometheus response: " + std::string(what));
}

// Prometheus writes sample values as strings: "1.5", "NaN", "+Inf", "-Inf".
bool SampleValue(std::string_view s, double& out) {
  if (s == "+Inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  auto v = ParseDouble(s);
  if (!v) return false;
  out = *v;
  return true;
}

// [t, "v"]: false (a dropped point) when it is not that.
bool ReadPoint(od::value v, Point& p) {
  od::array pair;
  if (v.get_array().get(pair)) return false;
  size_t i = 0;
  bool ok = true;
  for (auto element : pair) {
    od::value e;
    if (element.get(e)) return false;
    if (i == 0) {
      if (e.get_double().get(p.t) || !std::isfinite(p.t)) ok = false;
    } else if (i == 1) {
      std::string_view s;
      if (e.get_string().get(s) || !SampleValue(s, p.v)) ok = false;
    } else {
      ok = false;
    }
    ++i;
  }
  return ok && i == 2;
}

// The labels of "metric": false when over the limits or not strings.
bool ReadLabels(od::value v, const ResponseLimits& limits,
                std::map<std::string, std::string>& out) {
  od::object o;
  if (v.get_object().get(o)) return false;
  for (auto field : o) {
    std::string_view key, value;
    if (field.unescaped_key().get(key)) return false;
    if (field.value().get_string().get(value)) return false;
    if (key.size() > limits.max_label_bytes || value.size() > limits.max_label_bytes) return false;
    if (out.size() >= limits.max_labels) return false;
    out[std::string(key)] = std::string(value);
  }
  return true;
}

struct Reader {
  const ResponseLimits& limits;
  QueryResult& result;
  size_t total_points = 0;

  // One element of "result". Errors only for a document simdjson cannot walk.
  Status ReadSeries(od::value v, bool matrix) {
    od::object o;
    if (v.get_object().get(o)) {
      ++result.drops.series;
      return Status::Ok();
    }
    Series s;
    bool keep = result.series.size() < limits.max_series;
    bool has_metric = false;
    for (auto field : o) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return Bad("a result's key is not a string");
      od::value value;
      if (field.value().get(value)) return Bad("a result's field is not JSON");
      if (key == "metric") {
        has_metric = true;
        if (keep && !ReadLabels(value, limits, s.labels)) keep = false;
      } else if (matrix && key == "values") {
        od::array points;
        if (value.get_array().get(points)) {
          keep = false;
          continue;
        }
        for (auto element : points) {
          od::value pv;
          Point p;
          if (element.get(pv)) return Bad("a point is not JSON");
          if (!keep) continue;
          if (!ReadPoint(pv, p) || !(s.points.empty() || p.t > s.points.back().t) ||
              s.points.size() >= limits.max_points || total_points >= limits.max_total_points) {
            ++result.drops.points;
            continue;
          }
          s.points.push_back(p);
          ++total_points;
        }
      } else if (!matrix && key == "value") {
        Point p;
        if (!ReadPoint(value, p) || total_points >= limits.max_total_points) {
          ++result.drops.points;
        } else if (keep) {
          s.points.push_back(p);
          ++total_points;
        }
      }
    }
    if (!keep || !has_metric) {
      ++result.drops.series;
      return Status::Ok();
    }
    result.series.push_back(std::move(s));
    return Status::Ok();
  }
};

}  // namespace

Result<QueryResult> ParseQueryResponse(std::string_view body, const ResponseLimits& limits) {
  simdjson::padded_string padded(body);
  od::parser parser;
  od::document doc;
  if (parser.iterate(padded).get(doc)) return Bad("not JSON");
  od::object top;
  if (doc.get_object().get(top)) return Bad("not a JSON object");
  std::string status, error_type, error, result_type;
  QueryResult result;
  Reader reader{limits, result};
  bool have_result = false;
  for (auto field : top) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return Bad("a key is not a string");
    od::value value;
    if (field.value().get(value)) return Bad("a field is not JSON");
    std::string_view s;
    if (key == "status" || key == "errorType" || key == "error") {
      if (value.get_string().get(s)) {
        std::string what = "\"";  // not "\"" + std::string: a GCC 12 -Wrestrict false positive
        what += key;
        return Bad(what + "\" is not a string");
      }
      if (key == "status") {
        status = std::string(s.substr(0, 32));
      } else {
        (key == "error" ? error : error_type) = Quote(s, 200);
      }
    } else if (key == "data") {
      od::object data;
      if (value.get_object().get(data)) return Bad("\"data\" is not an object");
      for (auto df : data) {
        std::string_view dkey;
        if (df.unescaped_key().get(dkey)) return Bad("a key of \"data\" is not a string");
        od::value dv;
        if (df.value().get(dv)) return Bad("a field of \"data\" is not JSON");
        if (dkey == "resultType") {
          if (dv.get_string().get(s)) return Bad("\"resultType\" is not a string");
          result_type = std::string(s.substr(0, 32));
        } else if (dkey == "result") {
          // resultType comes first in Prometheus's answers; a reordered one is read as a matrix
          // unless it said vector before.
          bool matrix = result_type != "vector";
          if (!result_type.empty() && result_type != "matrix" && result_type != "vector") {
            return Bad("resultType \"" + result_type + "\" is neither matrix nor vector");
          }
          od::array items;
          if (dv.get_array().get(items)) return Bad("\"result\" is not an array");
          for (auto item : items) {
            od::value iv;
            if (item.get(iv)) return Bad("a result is not JSON");
            if (Status st = reader.ReadSeries(iv, matrix); !st.ok()) return st;
          }
          have_result = true;
        }
      }
    }
  }
  if (status.empty()) return Bad("no \"status\"");
  if (status != "success") {
    return Bad("status " + Quote(status) + ": " + (error_type.empty() ? "" : error_type + ": ") +
               error);
  }
  if (!have_result) return Bad("no \"data\".\"result\"");
  if (result_type != "matrix" && result_type != "vector") {
    return Bad("resultType \"" + result_type + "\" is neither matrix nor vector");
  }
  return result;
}

}  // namespace tocsin::jobview
