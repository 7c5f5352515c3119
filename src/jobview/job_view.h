#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/report.h"
#include "base/status.h"
#include "base/time.h"
#include "jobview/prom_response.h"
#include "jobview/queries.h"

namespace tocsin::jobview {

struct JobOptions {
  JobRef job;
  TimePoint until;                   // the window's end (the CLI: now)
  std::chrono::seconds since{3600};  // the window's length, at most a day
  std::chrono::seconds step{0};      // 0: the window / 720, rounded up to 15 s, at least 15 s
  ResponseLimits limits;
  int parallel = 4;  // queries in flight at once (after the first, which finds the job's nodes)
  // Where the series come from: the rules' recorded series when they cover the window (auto),
  // always the rules' expressions over the agents' series, or always the recorded series.
  enum class Source { kAuto, kExpressions, kRecords };
  Source source = Source::kAuto;
};

// GET `path` (with its query) on the Prometheus: the body of a 2xx answer. Called from several
// threads at once (JobOptions::parallel). The CLI's is a pool of ApiClients (bounded timeouts and
// retries, capped body); tests answer from memory.
using Fetch = std::function<Result<std::string>(const std::string& path)>;

struct NodeView {
  std::map<std::string, std::vector<Point>> series;  // record name -> the node's points
  std::map<std::string, size_t> transports;          // NCCL transport -> processes seen
};

// One verdict on one node: the latest run of its condition that held for the alert's `for`.
struct Episode {
  const Verdict* verdict = nullptr;
  std::string node;
  double start = 0, end = 0;  // Unix seconds of the run's first and last points
  bool ongoing = false;       // the run reaches the window's last step
  size_t runs = 0;            // runs that held for `for` within the window
};

struct JobView {
  JobOptions options;
  double start = 0, end = 0;
  int64_t step = 0;
  std::map<std::string, NodeView> nodes;  // every node of the job (tocsin:job_node:info)
  std::vector<Episode> episodes;          // by verdict, then node
  Drops drops;                            // of every response together
  size_t queries = 0;
  bool recorded = false;  // the records' series were read (else their expressions)
};

// The URL path of a range query (query, start, end, step percent-encoded).
std::string RangePath(const std::string& promql, double start, double end, int64_t step);

// Asks Prometheus each record of the group tocsin-job and each verdict's condition for the job
// over the window: from the records' own series when Prometheus recorded them for every node
// of the job over the whole window (plain selectors: cheap at any scale), else from their
// expressions over the agents' series (no recorded history needed: backfilled data, rules
// deployed within the window, a Prometheus without them). NotFound when the window has no
// tocsin_pod_info of the job; a failed query or a response that is not a query result is the
// error of Fetch or of ParseQueryResponse, naming the record or the check.
Result<JobView> QueryJob(const Fetch& fetch, const JobOptions& options);

// The report contract: inventory (per node: the means and maxima, transports; the window,
// drops), the NODES table side by side, and one finding per episode with `since`, the evidence
// series and the rule.
Report JobReport(const JobView& view, const std::string& host, TimePoint generated_at);

}  // namespace tocsin::jobview
