#include "jobview/job_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/escape.h"

namespace tocsin::jobview {
namespace {

constexpr int64_t kMinStep = 15;  // the agent's fastest task interval (fabric: 10 s) rounded
constexpr int64_t kStepsPerWindow = 720;

int64_t StepFor(const JobOptions& o) {
  if (o.step.count() > 0) return o.step.count();
  int64_t step = (o.since.count() + kStepsPerWindow - 1) / kStepsPerWindow;
  step = (step + kMinStep - 1) / kMinStep * kMinStep;
  return std::max(step, kMinStep);
}

// Runs of consecutive points (no step missing) as (first t, last t).
std::vector<std::pair<double, double>> Runs(const std::vector<Point>& points, int64_t step) {
  std::vector<std::pair<double, double>> runs;
  for (const Point& p : points) {
    if (runs.empty() || p.t - runs.back().second > 1.5 * static_cast<double>(step)) {
      runs.emplace_back(p.t, p.t);
    } else {
      runs.back().second = p.t;
    }
  }
  return runs;
}

}  // namespace

std::string RangePath(const std::string& promql, double start, double end, int64_t step) {
  return fmt::format("/api/v1/query_range?query={}&start={:.0f}&end={:.0f}&step={}",
                     PercentEncode(promql), start, end, step);
}

Result<JobView> QueryJob(const Fetch& fetch, const JobOptions& o) {
  JobView view;
  view.options = o;
  view.step = StepFor(o);
  view.end = std::floor(std::chrono::duration<double>(o.until.time_since_epoch()).count());
  view.start = view.end - static_cast<double>(o.since.count());
  auto run = [&](const std::string& what, const std::string& expr) -> Result<QueryResult> {
    auto body =
        fetch(RangePath(ForJob(ExpandRecords(expr), o.job), view.start, view.end, view.step));
    if (!body.ok()) return body.status().WithPrefix(what);
    auto r = ParseQueryResponse(*body, o.limits);
    if (!r.ok()) return r.status().WithPrefix(what);
    // A timestamp outside the window asked for is the server's error (or hostile): dropped and
    // counted, so that no episode, onset or time conversion sees it.
    const double lo = view.start - view.step, hi = view.end + view.step;
    for (auto& series : r->series) {
      size_t before = series.points.size();
      std::erase_if(series.points, [&](const Point& p) { return !(p.t >= lo && p.t <= hi); });
      r->drops.points += before - series.points.size();
    }
    view.drops += r->drops;
    ++view.queries;
    return r;
  };
  for (const Record& rec : Records()) {
    auto r = run(rec.name, rec.name);
    if (!r.ok()) return r.status();
    for (auto& s : r->series) {
      auto node = s.labels.find("node");
      bool member = node != s.labels.end() &&
                    (rec.name == std::string_view(kInfo) || view.nodes.count(node->second));
      if (!member) {
        ++view.drops.series;  // no node label, or a node the job does not hold: not the job's
        continue;
      }
      NodeView& nv = view.nodes[node->second];
      if (rec.name == std::string_view(kProcessTransport)) {
        auto transport = s.labels.find("transport");
        ++nv.transports[transport == s.labels.end() ? "unknown" : transport->second];
      } else {
        nv.series[rec.name] = std::move(s.points);
      }
    }
    if (rec.name == std::string_view(kInfo) && view.nodes.empty()) {
      return Status::NotFound(fmt::format(
          "no tocsin_pod_info{{namespace=\"{}\", job_name=\"{}\"}} from {} to {}: the job did "
          "not run then, or no agent attributes its pods (docs/METRICS.md, \"Jobs\")",
          o.job.namespace_, o.job.name,
          FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.start))),
          FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.end)))));
    }
  }
  for (const Verdict& v : Verdicts()) {
    auto r = run(v.check, v.expr);
    if (!r.ok()) return r.status();
    std::map<std::string, Episode> by_node;
    for (const auto& s : r->series) {
      auto node = s.labels.find("node");
      if (node == s.labels.end() || !view.nodes.count(node->second)) {
        ++view.drops.series;
        continue;
      }
      for (const auto& [first, last] : Runs(s.points, view.step)) {
        if (last - first < static_cast<double>(v.hold.count())) continue;
        Episode& e = by_node[node->second];
        e.verdict = &v;
        e.node = node->second;
        e.start = first;
        e.end = last;
        e.ongoing = last + static_cast<double>(view.step) > view.end;
        ++e.runs;
      }
    }
    for (auto& [node, e] : by_node) view.episodes.push_back(std::move(e));
  }
  return view;
}

}  // namespace tocsin::jobview
