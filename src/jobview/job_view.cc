#include "jobview/job_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "base/escape.h"
#include "jobview/job_queries.h"

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

double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
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
      try {
        auto body = fetch(paths[i]);
        got[i] = body.ok() ? ParseQueryResponse(*body, limits) : Result<QueryResult>(body.status());
      } catch (const std::exception& e) {  // never out of a thread: std::terminate
        got[i] = Result<QueryResult>(Status::Internal(std::string("query failed: ") + e.what()));
      }
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


// A bitmask value as its bits: a whole number from 0 to 15, else nullopt (garbage: not a value
// the rule writes, so neither a verdict nor coverage).
std::optional<int> BitsOf(double v) {
  if (!(v >= 0 && v <= 15) || v != std::floor(v)) return std::nullopt;
  return static_cast<int>(v);
}

// Whether the bitmask record (recorded with every other record of the group, in the same
// evaluation) is there wherever the agents said a pod of the job ran. Every node needs cells of
// its own; a cell may be missing only among the first of a run of the job's cells (the rule is
// evaluated once per interval after the data arrives): one cell and two minutes' worth. What is
// missing elsewhere (rules deployed within the window, a rule failing) is not covered.
bool GridCovers(const QueryResult& recorded, const QueryResult& raw, int64_t grid) {
  const size_t edge = 1 + static_cast<size_t>((120 + grid - 1) / grid);
  std::map<std::string, std::set<double>> cells;
  for (const auto& s : recorded.series) {
    auto node = s.labels.find("node");
    if (node == s.labels.end()) continue;
    for (const Point& p : s.points) {
      if (BitsOf(p.v)) cells[node->second].insert(p.t);  // 0 is recorded: no verdict
    }
  }
  for (const auto& s : raw.series) {
    auto node = s.labels.find("node");
    if (node == s.labels.end()) continue;
    auto have = cells.find(node->second);
    if (have == cells.end()) return false;  // no bitmask at all: old rules, or none
    size_t in_run = 0;  // cells since the run of the job's cells began
    double last = -1e300;
    for (const Point& p : s.points) {
      if (!(p.v > 0)) continue;
      in_run = p.t - last > 1.5 * static_cast<double>(grid) ? 1 : in_run + 1;
      last = p.t;
      if (!have->second.count(p.t) && in_run > edge) return false;
    }
  }
  return true;
}

// Each series' one value by its node (an instant query's answer).
std::map<std::string, double> ByNode(const QueryResult& r) {
  std::map<std::string, double> out;
  for (const auto& s : r.series) {
    auto node = s.labels.find("node");
    if (node != s.labels.end() && !s.points.empty()) out[node->second] = s.points.back().v;
  }
  return out;
}

// The columns: which record, reduced how, into which field of NodeValues.
struct Column {
  const char* record;
  const char* fn;
  double NodeValues::*field;
};
constexpr Column kColumns[] = {
    {kGpuUtilization, "avg", &NodeValues::gpu},
    {kRdmaRate, "avg", &NodeValues::rdma},
    {kEthernetRate, "avg", &NodeValues::ethernet},
    {kStorageP99, "max", &NodeValues::storage_p99},
    {kLustreWait, "max", &NodeValues::lustre_wait},
    {kSocketProcesses, "max", &NodeValues::socket_processes},
};

// Runs are cut where a step is missing; `seconds` of run at least (the alert's `for`).
void AddEpisodes(const Verdict& v, const std::string& node, const std::vector<Point>& points,
                 const JobView& view, std::map<std::string, Episode>& by_node) {
  for (const auto& [first, last] : Runs(points, view.step)) {
    if (last - first < static_cast<double>(v.hold.count())) continue;
    Episode& e = by_node[node];
    e.verdict = &v;
    e.node = node;
    e.start = first;
    e.end = last;
    e.ongoing = last + static_cast<double>(view.step) > view.end;
    ++e.runs;
  }
}

}  // namespace

int64_t GridSeconds(int64_t window, int64_t step) {
  int64_t grid = (window / 240 + kMinStep - 1) / kMinStep * kMinStep;
  return std::max(grid, step);
}

std::string InstantPath(const std::string& promql, double time) {
  return fmt::format("/api/v1/query?query={}&time={:.0f}", PercentEncode(promql), time);
}

Result<JobView> QueryJob(const Fetch& fetch, const JobOptions& o) {
  JobView view;
  view.options = o;
  view.step = StepFor(o);
  view.end = std::floor(std::chrono::duration<double>(o.until.time_since_epoch()).count());
  view.start = view.end - static_cast<double>(o.since.count());
  const int64_t window = o.since.count();
  const int64_t grid = GridSeconds(window, view.step);
  // Each cell counts the samples of the 5 minutes before it at least (Prometheus's lookback):
  // a rule evaluated every minute, or an agent scraped every 15 s, is in every cell.
  const int64_t lookback = std::max<int64_t>(grid, 300);
  auto take = [&](const std::string& what, Result<QueryResult> r) -> Result<QueryResult> {
    if (!r.ok()) return r.status().WithPrefix(what);
    // A timestamp outside the window asked for is the server's error (or hostile): dropped and
    // counted, so that no episode, onset or time conversion sees it.
    const double lo = view.start - static_cast<double>(std::max(view.step, grid));  // a cell's start
    const double hi = view.end + static_cast<double>(view.step);
    for (auto& series : r->series) {
      size_t before = series.points.size();
      std::erase_if(series.points, [&](const Point& p) { return !(p.t >= lo && p.t <= hi); });
      r->drops.points += before - series.points.size();
    }
    view.drops += r->drops;
    return r;
  };
  // Asks `paths` (what each is, for errors), at most o.parallel at once; the answers in order.
  auto ask = [&](const std::vector<std::pair<std::string, std::string>>& queries)
      -> Result<std::vector<QueryResult>> {
    std::vector<std::string> paths;
    for (const auto& q : queries) paths.push_back(q.second);
    std::vector<Result<QueryResult>> got = FetchAll(fetch, paths, o.limits, o.parallel);
    view.queries += paths.size();
    std::vector<QueryResult> out;
    for (size_t i = 0; i < got.size(); ++i) {
      TOCSIN_ASSIGN_OR_RETURN(QueryResult r, take(queries[i].first, std::move(got[i])));
      out.push_back(std::move(r));
    }
    return out;
  };
  auto range = [&](const std::string& q, int64_t step) {
    return RangePath(q, view.start, view.end, step);
  };
  auto instant = [&](const std::string& q) { return InstantPath(q, view.end); };

  // Round 1. Where and when the job ran (the agents' attribution), and where the rules recorded it.
  using Source = JobOptions::Source;
  JobQueries recorded(o.job, true, view.step), expressions(o.job, false, view.step);
  std::vector<std::pair<std::string, std::string>> first = {
      {kInfo, range(recorded.PodInfoGrid(lookback), grid)}};
  if (o.source != Source::kExpressions) {
    first.push_back({kVerdictBitmask, range(recorded.BitmaskGrid(lookback), grid)});
  }
  TOCSIN_ASSIGN_OR_RETURN(std::vector<QueryResult> grids, ask(first));
  for (auto& s : grids[0].series) {
    auto node = s.labels.find("node");
    if (node == s.labels.end()) {
      ++view.drops.series;
      continue;
    }
    if (std::any_of(s.points.begin(), s.points.end(), [](const Point& p) { return p.v > 0; })) {
      view.nodes[node->second];
    }
  }
  if (view.nodes.empty()) {
    return Status::NotFound(fmt::format(
        "no tocsin_pod_info{{namespace=\"{}\", job_name=\"{}\"}} from {} to {}: the job did "
        "not run then, or no agent attributes its pods (docs/METRICS.md, \"Jobs\")",
        o.job.namespace_, o.job.name,
        FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.start))),
        FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.end)))));
  }
  // The bitmask's greatest value in each cell (any bit of any sample or replica makes it above
  // 0): the nodes that had a verdict, or missed an input, are asked over the window at the step.
  std::vector<std::string> candidates;
  bool filter = true;
  if (grids.size() > 1) {
    for (const auto& s : grids[1].series) {
      auto node = s.labels.find("node");
      if (node == s.labels.end() || !view.nodes.count(node->second)) continue;
      if (std::any_of(s.points.begin(), s.points.end(),
                      [](const Point& p) { return BitsOf(p.v).value_or(0) > 0; })) {
        candidates.push_back(node->second);
        filter = filter && SafeNodeName(node->second);
      }
    }
  }
  view.recorded = o.source == Source::kRecords ||
                  (o.source == Source::kAuto && GridCovers(grids[1], grids[0], grid));
  if (!filter || candidates.size() > 64) candidates = {"*"};  // every node of the job

  // Round 2. The table: each column reduced over the window; the transports; the verdicts: the
  // bitmask of the nodes that had one (recorded), or each condition (expressions).
  const JobQueries& used = view.recorded ? recorded : expressions;
  std::vector<std::pair<std::string, std::string>> qs;
  for (const Column& c : kColumns) qs.push_back({c.record, instant(used.Reduce(c.record, c.fn, window))});
  qs.push_back({kProcessTransport, instant(used.Transports(window))});
  if (!used.recorded()) {
    for (const Verdict& v : Verdicts()) qs.push_back({v.check, range(used.Condition(v), view.step)});
  } else if (!candidates.empty()) {
    if (candidates.front() == "*") candidates.clear();
    qs.push_back({kVerdictBitmask, range(used.Bitmask(candidates), view.step)});
  }
  TOCSIN_ASSIGN_OR_RETURN(std::vector<QueryResult> table, ask(qs));
  const size_t columns = std::size(kColumns);
  for (size_t i = 0; i < columns; ++i) {
    for (const auto& [node, v] : ByNode(table[i])) {
      auto it = view.nodes.find(node);
      if (it == view.nodes.end()) {
        ++view.drops.series;  // a node the job does not hold: not the job's
        continue;
      }
      it->second.window.*kColumns[i].field = v;
    }
  }
  auto known = [&](const Series& s) -> const std::string* {
    auto node = s.labels.find("node");
    if (node == s.labels.end() || !view.nodes.count(node->second)) {
      ++view.drops.series;
      return nullptr;
    }
    return &node->second;
  };
  for (const auto& s : table[columns].series) {
    const std::string* node = known(s);
    if (node == nullptr) continue;
    auto transport = s.labels.find("transport");
    ++view.nodes[*node].transports[transport == s.labels.end() ? "unknown" : transport->second];
  }

  // The verdicts' episodes.
  std::map<const Verdict*, std::map<std::string, Episode>> episodes;
  if (used.recorded()) {
    for (size_t i = columns + 1; i < table.size(); ++i) {
      for (const auto& s : table[i].series) {
        const std::string* node = known(s);
        if (node == nullptr) continue;
        std::vector<Point> missing;
        for (const Point& p : s.points) {
          if (!BitsOf(p.v)) ++view.drops.points;
          if (BitsOf(p.v).value_or(0) & kInputsMissingBit) missing.push_back(p);
        }
        if (!missing.empty()) {
          NodeView& nv = view.nodes[*node];
          nv.inputs_missing_since = missing.front().t;
          nv.inputs_missing_steps = missing.size();
        }
        for (const Verdict& v : Verdicts()) {
          std::vector<Point> held;
          for (const Point& p : s.points) {
            if (BitsOf(p.v).value_or(0) & v.bit) held.push_back(p);
          }
          AddEpisodes(v, *node, held, view, episodes[&v]);
        }
      }
    }
  } else {
    for (size_t i = 0; i < Verdicts().size(); ++i) {
      const Verdict& v = Verdicts()[i];
      for (const auto& s : table[columns + 1 + i].series) {
        if (const std::string* node = known(s)) AddEpisodes(v, *node, s.points, view, episodes[&v]);
      }
    }
  }
  for (const Verdict& v : Verdicts()) {
    for (auto& [node, e] : episodes[&v]) view.episodes.push_back(std::move(e));
  }

  // Round 3: each episode's evidence: the columns over its run, for every node of the job (the
  // straggler's peers), asked once per distinct run.
  std::map<std::pair<double, double>, size_t> runs;  // (start, end) -> index in `evidence`
  std::vector<std::pair<std::string, std::string>> evidence;
  for (const Episode& e : view.episodes) {
    auto key = std::make_pair(e.start, e.end);
    if (runs.count(key) || runs.size() >= kMaxEpisodeWindows) continue;
    runs[key] = evidence.size();
    int64_t seconds = static_cast<int64_t>(e.end - e.start) + view.step;
    for (const Column& c : kColumns) {
      evidence.push_back({c.record, InstantPath(used.Reduce(c.record, c.fn, seconds), e.end)});
    }
  }
  TOCSIN_ASSIGN_OR_RETURN(std::vector<QueryResult> values, ask(evidence));
  for (Episode& e : view.episodes) {
    auto it = runs.find({e.start, e.end});
    std::map<std::string, NodeValues> of;
    if (it == runs.end()) {
      e.over_window = true;
      for (const auto& [node, nv] : view.nodes) of[node] = nv.window;
    } else {
      for (size_t i = 0; i < columns; ++i) {
        for (const auto& [node, v] : ByNode(values[it->second + i])) {
          if (view.nodes.count(node)) of[node].*kColumns[i].field = v;
        }
      }
    }
    e.values = of[e.node];
    std::vector<double> totals;
    for (const auto& [node, v] : of) {
      if (std::isfinite(v.rdma + v.ethernet)) totals.push_back(v.rdma + v.ethernet);
    }
    e.peers_median = Median(std::move(totals));
  }

  // Round 4, --plot only: every node's series.
  if (o.series) {
    std::vector<std::pair<std::string, std::string>> plot;
    for (const Column& c : kColumns) plot.push_back({c.record, range(used.Series(c.record), view.step)});
    TOCSIN_ASSIGN_OR_RETURN(std::vector<QueryResult> series, ask(plot));
    for (size_t i = 0; i < columns; ++i) {
      for (auto& s : series[i].series) {
        if (const std::string* node = known(s)) {
          view.nodes[*node].series[kColumns[i].record] = std::move(s.points);
        }
      }
    }
  }
  return view;
}

}  // namespace tocsin::jobview
