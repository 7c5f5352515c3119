// A Prometheus in memory for job_view_test.cc: it answers the queries QueryJob asks (built by
// JobQueries) from points per record. Test-only.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jobview/job_queries.h"
#include "jobview/job_view.h"

namespace tocsin::jobview::fake {

inline constexpr double kEnd = 1700003600;  // the window: the hour before
using NodePoints = std::map<std::string, std::vector<Point>>;

inline std::string Matrix(const NodePoints& nodes, const std::string& extra_label = "") {
  std::string out = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  bool first = true;
  for (const auto& [node, points] : nodes) {
    out += first ? "" : ",";
    first = false;
    out +=
        fmt::format(R"({{"metric":{{"namespace":"ml","job_name":"llm","node":"{}"{}}},"values":[)",
                    node, extra_label);
    for (size_t i = 0; i < points.size(); ++i) {
      out += fmt::format("{}[{},\"{}\"]", i ? "," : "", points[i].t, points[i].v);
    }
    out += "]}";
  }
  return out + "]}}";
}

inline std::string Vector(const std::map<std::string, double>& nodes, double at) {
  std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
  bool first = true;
  for (const auto& [node, v] : nodes) {
    out += first ? "" : ",";
    first = false;
    out += fmt::format(
        R"({{"metric":{{"namespace":"ml","job_name":"llm","node":"{}"}},"value":[{},"{}"]}})", node,
        at, v);
  }
  return out + "]}}";
}

// Every step of [from, to] at `v`.
inline std::vector<Point> Flat(double v, double from = kEnd - 3600, double to = kEnd) {
  std::vector<Point> out;
  for (double t = from; t <= to; t += 15) out.push_back({t, v});
  return out;
}

inline std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A Prometheus in memory for job ml/llm: it answers the kinds of query QueryJob asks (built by
// JobQueries, so that a change there is a change here) from the points each table holds.
struct FakePrometheus {
  JobOptions options;
  // The rules' expressions over the agents' series: per record (kInfo: where tocsin_pod_info
  // is) and per verdict's check id (its condition), each node's points.
  std::map<std::string, NodePoints> answers;
  std::map<std::string, NodePoints> recorded;  // the recorded series (and kVerdictBitmask)
  std::vector<std::pair<std::string, std::string>> transports;  // (node, transport)
  std::map<std::string, std::string> raw;  // record or check -> a body answered as it is
  std::vector<std::string> asked;
  std::mutex mu;

  FakePrometheus() {
    options.job = {"ml", "llm"};
    options.until = FromUnixSeconds(static_cast<int64_t>(kEnd));
  }

  // The query string's parameters, decoded.
  static std::map<std::string, std::string> Params(const std::string& path) {
    std::map<std::string, std::string> out;
    std::string_view q = std::string_view(path).substr(path.find('?') + 1);
    while (!q.empty()) {
      size_t amp = q.find('&');
      std::string_view kv = q.substr(0, amp);
      size_t eq = kv.find('=');
      out[std::string(kv.substr(0, eq))] = Unescape(kv.substr(eq + 1));
      q = amp == std::string_view::npos ? "" : q.substr(amp + 1);
    }
    return out;
  }

  // Whether `query` is `pattern` with some number where `pattern` has 987654: that number.
  static std::optional<int64_t> Match(const std::string& query, const std::string& pattern) {
    size_t at = pattern.find("987654");
    std::string head = pattern.substr(0, at), tail = pattern.substr(at + 6);
    if (!query.starts_with(head) || !query.ends_with(tail) ||
        query.size() <= head.size() + tail.size()) {
      return std::nullopt;
    }
    std::string mid = query.substr(head.size(), query.size() - head.size() - tail.size());
    if (mid.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoll(mid);
  }

  static std::map<std::string, double> Reduce(const NodePoints& data, const std::string& fn,
                                              double from, double to) {
    std::map<std::string, double> out;
    for (const auto& [node, points] : data) {
      double sum = 0, best = -1e300;
      size_t n = 0;
      for (const Point& p : points) {
        if (p.t <= from || p.t > to) continue;
        sum += p.v;
        best = std::max(best, p.v);
        ++n;
      }
      if (n) out[node] = fn == "avg" ? sum / n : fn == "max" ? best : static_cast<double>(n);
    }
    return out;
  }

  std::string Answer(const std::string& path) {
    auto p = Params(path);
    const std::string& query = p["query"];
    bool range = path.starts_with("/api/v1/query_range");
    double at = range ? 0 : std::stod(p["time"]);
    for (bool rec : {true, false}) {
      // An instant query's subqueries run at the view's step: the window / 720, rounded up to 15 s.
      int64_t view_step = std::max<int64_t>(15, (options.since.count() + 720 * 15 - 1) / (720 * 15) * 15);
      JobQueries q(options.job, rec, range ? std::stoll(p["step"]) : view_step);
      const auto& table = rec ? recorded : answers;
      auto data = [&](const std::string& name) {
        auto it = table.find(name);
        return it == table.end() ? NodePoints{} : it->second;
      };
      if (auto lookback = Match(query, q.PodInfoGrid(987654)); range && lookback) {
        return Grid(answers[kInfo], p, *lookback, false);
      }
      if (auto lookback = Match(query, q.BitmaskGrid(987654)); range && rec && lookback) {
        return Grid(data(kVerdictBitmask), p, *lookback, true);
      }
      std::vector<std::string> names = {kVerdictBitmask};
      for (const Record& r : Records()) names.push_back(r.name);
      for (const std::string& name : names) {
        for (const char* fn : {"avg", "max", "count"}) {
          if (auto seconds = Match(query, q.Reduce(name, fn, 987654)); seconds && !range) {
            if (raw.count(name)) return raw[name];
            return Vector(Reduce(data(name), fn, at - static_cast<double>(*seconds), at), at);
          }
        }
        if (range && query == q.Series(name)) return Matrix(data(name));
      }
      if (auto seconds = Match(query, q.Transports(987654)); seconds && !range) {
        std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
        for (size_t i = 0; i < transports.size(); ++i) {
          out += fmt::format(R"({}{{"metric":{{"namespace":"ml","job_name":"llm","node":"{}",)"
                             R"("pod":"p{}","pid":"{}","transport":"{}"}},"value":[{},"1"]}})",
                             i ? "," : "", transports[i].first, i, i, transports[i].second, at);
        }
        return out + "]}}";
      }
      if (rec && range) {
        NodePoints set;
        for (const auto& [node, points] : data(kVerdictBitmask)) {
          for (const Point& pt : points) {
            if (pt.v > 0) set[node].push_back(pt);
          }
        }
        std::vector<std::string> some;  // the nodes with any bit
        for (const auto& [node, points] : set) some.push_back(node);
        if (query == q.Bitmask({}) || query == q.Bitmask(some)) return Matrix(set);
      }
      for (const Verdict& v : Verdicts()) {
        if (!rec && range && query == q.Condition(v)) {
          return raw.count(v.check) ? raw[v.check] : Matrix(answers[v.check]);
        }
      }
    }
    std::string what = query.substr(0, 80);
    std::replace(what.begin(), what.end(), '"', '\'');
    return R"({"status":"error","errorType":"bad_data","error":"the fake does not know )" + what +
           "\"}";
  }

  // count_over_time[lookback] (or max_over_time) at `grid` on [start, end]: the cells where
  // the node has points.
  static std::string Grid(const NodePoints& data, std::map<std::string, std::string>& p,
                          int64_t lookback, bool max) {
    double start = std::stod(p["start"]), end = std::stod(p["end"]), grid = std::stod(p["step"]);
    NodePoints out;
    for (const auto& [node, points] : data) {
      for (double t = start; t <= end; t += grid) {
        size_t n = 0;
        double best = -1e300;
        for (const Point& pt : points) {
          if (pt.t > t - static_cast<double>(lookback) && pt.t <= t) {
            ++n;
            best = std::max(best, pt.v);
          }
        }
        if (n) out[node].push_back({t, max ? best : static_cast<double>(n)});
      }
    }
    return Matrix(out);
  }

  Fetch fetch() {
    return [this](const std::string& path) -> Result<std::string> {
      std::lock_guard lock(mu);  // QueryJob asks from several threads
      asked.push_back(path);
      return Answer(path);
    };
  }
};

}  // namespace tocsin::jobview::fake
