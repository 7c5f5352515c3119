#pragma once

#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <optional>
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
  // Each node's series over the window at `step` too (--plot): range queries of every node's
  // records, far more work for Prometheus than the table's and the verdicts' queries.
  bool series = false;
};

// GET `path` (with its query) on the Prometheus: the body of a 2xx answer. Called from several
// threads at once (JobOptions::parallel). The CLI's is a pool of ApiClients (bounded timeouts and
// retries, capped body); tests answer from memory.
using Fetch = std::function<Result<std::string>(const std::string& path)>;

// A node's records reduced over an interval: GPU, RDMA and Ethernet as means, the storage
// probe's p99, the Lustre wait and the processes on sockets as maxima; NaN where no sample is.
struct NodeValues {
  double gpu = std::numeric_limits<double>::quiet_NaN();
  double rdma = std::numeric_limits<double>::quiet_NaN();
  double ethernet = std::numeric_limits<double>::quiet_NaN();
  double storage_p99 = std::numeric_limits<double>::quiet_NaN();
  double lustre_wait = std::numeric_limits<double>::quiet_NaN();
  double socket_processes = std::numeric_limits<double>::quiet_NaN();
};

struct NodeView {
  NodeValues window;                                 // over the whole window
  std::map<std::string, std::vector<Point>> series;  // JobOptions::series: record -> points
  std::map<std::string, size_t> transports;          // NCCL transport -> processes seen
  // Recorded only: the first step whose bitmask said an input record was missing here (a rule
  // failing, the agent's task down), and how many steps said so: no verdict could be judged then.
  std::optional<double> inputs_missing_since;
  size_t inputs_missing_steps = 0;
};

// One verdict on one node: the latest run of its condition that held for the alert's `for`.
struct Episode {
  const Verdict* verdict = nullptr;
  std::string node;
  double start = 0, end = 0;  // Unix seconds of the run's first and last points
  bool ongoing = false;       // the run reaches the window's last step
  size_t runs = 0;            // runs that held for `for` within the window
  // The node's values over the run, and the median over the job's nodes of RDMA + Ethernet
  // (the straggler's yardstick); over the whole window instead when `over_window` (more runs
  // than are asked about one by one: kMaxEpisodeWindows).
  NodeValues values;
  double peers_median = std::numeric_limits<double>::quiet_NaN();
  bool over_window = false;
};

// Distinct episode intervals whose values are asked for one by one; the rest use the window's.
inline constexpr size_t kMaxEpisodeWindows = 16;

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
// The cell of the presence grids that find the job's nodes and check the records' coverage:
// about 240 cells over the window, never finer than the step.
int64_t GridSeconds(int64_t window, int64_t step);
// The URL path of an instant query at `time`.
std::string InstantPath(const std::string& promql, double time);

// Asks Prometheus about the job over the window, in three rounds of queries sent at most
// o.parallel at once: (1) coarse grids of tocsin_pod_info and of the bitmask record (the job's
// nodes; whether the rules recorded them over the whole window; which nodes had a verdict or
// missed an input); (2) each column reduced over the window by an instant query, the NCCL
// transports, and the bitmask of the nodes that had a verdict over the window at `step` (the
// episodes); (3) the columns over each episode's run (its evidence, the straggler's peers).
// From the recorded series (plain selectors: each sample read once) when they cover every node
// of the job over the window with every input, else from the rules' expressions over the
// agents' series as subqueries at `step` (no recorded history needed: backfilled data, rules
// deployed within the window, a Prometheus without them), where the episodes come from each
// verdict's condition over the window. NotFound when the window has no tocsin_pod_info of the
// job; a failed query or a response that is not a query result is the error of Fetch or of
// ParseQueryResponse, naming the record or the check.
Result<JobView> QueryJob(const Fetch& fetch, const JobOptions& options);

// The report contract: inventory (per node: the means and maxima, transports; the window,
// drops), the NODES table side by side, and one finding per episode with `since`, the evidence
// series and the rule.
Report JobReport(const JobView& view, const std::string& host, TimePoint generated_at);

}  // namespace tocsin::jobview
