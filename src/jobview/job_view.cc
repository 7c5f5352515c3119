#include "jobview/job_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>
#include <thread>

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

namespace {

// Fetches and parses each path, at most `parallel` requests in flight: the answers in order.
std::vector<Result<QueryResult>> FetchAll(const Fetch& fetch, const std::vector<std::string>& paths,
                                          const ResponseLimits& limits, int parallel) {
  std::vector<std::optional<Result<QueryResult>>> got(paths.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < paths.size();) {
      auto body = fetch(paths[i]);
      got[i] = body.ok() ? ParseQueryResponse(*body, limits) : Result<QueryResult>(body.status());
    }
  };
  size_t threads = std::min<size_t>(static_cast<size_t>(std::max(parallel, 1)), paths.size());
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  std::vector<Result<QueryResult>> out;
  out.reserve(got.size());
  for (auto& g : got) out.push_back(std::move(*g));
  return out;
}

// Whether the info record's recorded series cover what its expression gives: every node of the
// job, with at most two minutes' worth of steps (two at least) fewer at each: a rule is
// evaluated after the data arrives, once per evaluation interval (15 s to 1 min).
bool RecordsCover(const QueryResult& recorded, const QueryResult& expanded, int64_t step) {
  const size_t slack = 2 + static_cast<size_t>((120 + step - 1) / step);
  std::map<std::string, size_t> points;  // the most of any one series (duplicates never add up)
  for (const auto& s : recorded.series) {
    auto node = s.labels.find("node");
    if (node != s.labels.end()) {
      points[node->second] = std::max(points[node->second], s.points.size());
    }
  }
  for (const auto& s : expanded.series) {
    auto node = s.labels.find("node");
    if (node == s.labels.end()) continue;
    auto it = points.find(node->second);
    if (it == points.end() || it->second + slack < s.points.size()) return false;
  }
  return true;
}

}  // namespace

Result<JobView> QueryJob(const Fetch& fetch, const JobOptions& o) {
  JobView view;
  view.options = o;
  view.step = StepFor(o);
  view.end = std::floor(std::chrono::duration<double>(o.until.time_since_epoch()).count());
  view.start = view.end - static_cast<double>(o.since.count());
  auto expanded = [&](const std::string& expr) {
    return RangePath(ForJob(ExpandRecords(expr), o.job), view.start, view.end, view.step);
  };
  auto recorded = [&](const std::string& expr) {
    return RangePath(ForJobRecorded(expr, o.job), view.start, view.end, view.step);
  };
  auto take = [&](const std::string& what, Result<QueryResult> r) -> Result<QueryResult> {
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
  // The job's nodes first (the info record); then every other record and verdict at once, at
  // most o.parallel in flight (Prometheus evaluates them on its own cores), taken in order.
  using Source = JobOptions::Source;
  std::string info = o.source == Source::kRecords ? recorded(kInfo) : expanded(kInfo);
  std::vector<Result<QueryResult>> answers = FetchAll(fetch, {info}, o.limits, 1);
  if (!answers.front().ok() || answers.front()->series.empty()) {
    // No pods (or an error): the loop below says so before anything else is asked.
  } else {
    view.recorded = o.source == Source::kRecords;
    if (o.source == Source::kAuto) {
      auto rec = FetchAll(fetch, {recorded(kInfo)}, o.limits, 1);
      view.recorded = rec.front().ok() && RecordsCover(*rec.front(), *answers.front(), view.step);
      ++view.queries;
    }
    auto fetch_rest = [&] {
      std::vector<std::string> rest;
      auto path = [&](const std::string& e) { return view.recorded ? recorded(e) : expanded(e); };
      for (const Record& rec : Records().subspan(1)) rest.push_back(path(rec.name));
      for (const Verdict& v : Verdicts()) rest.push_back(path(v.expr));
      return FetchAll(fetch, rest, o.limits, o.parallel);
    };
    std::vector<Result<QueryResult>> rest = fetch_rest();
    if (o.source == Source::kAuto && view.recorded) {
      // The records every node needs must cover it too: a rule that fails (a GPU shared by two
      // jobs makes its join many-to-many) or lags would otherwise read as a job with no GPU
      // or fabric data, and its verdicts could never fire.
      for (size_t i = 0; i + 1 < Records().size() && view.recorded; ++i) {
        std::string_view name = Records()[i + 1].name;
        bool dense = name == kGpuUtilization || name == kRdmaRate || name == kEthernetRate;
        if (dense && (!rest[i].ok() || !RecordsCover(*rest[i], *answers.front(), view.step))) {
          view.recorded = false;
        }
      }
      if (!view.recorded) {
        view.queries += Records().size() - 1 + Verdicts().size();  // asked, then set aside
        rest = fetch_rest();
      }
    }
    for (auto& m : rest) answers.push_back(std::move(m));
  }
  size_t next_answer = 0;
  for (const Record& rec : Records()) {
    if (next_answer >= answers.size()) break;  // no pods: the NotFound below was returned
    auto r = take(rec.name, std::move(answers[next_answer++]));
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
    auto r = take(v.check, std::move(answers[next_answer++]));
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
