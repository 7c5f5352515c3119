#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jobview/queries.h"

namespace tocsin::jobview {

// The PromQL `tocsin job` asks about one job, from the recorded series of the group tocsin-job
// (plain selectors) or from the rules' expressions over the agents' series (subqueries at
// `step`). Every answer is one series per node of the job (labels namespace, job_name, node),
// the same series of two Prometheus replicas counted once (max by).
class JobQueries {
 public:
  JobQueries(JobRef job, bool recorded, int64_t step);

  // For range queries on a coarse grid, over the `lookback` seconds before each cell: how many
  // samples of the agents' tocsin_pod_info each node has (where and when the job ran), and the
  // bitmask record's greatest value (where and when the rules recorded it, and which nodes had
  // a verdict or missed an input then: a value is the sum of its bits).
  std::string PodInfoGrid(int64_t lookback) const;
  std::string BitmaskGrid(int64_t lookback) const;
  // Instant: `record` over the `seconds` before the query's time, by `fn` (avg, max or count).
  std::string Reduce(std::string_view record, std::string_view fn, int64_t seconds) const;
  // Instant: every NCCL process of the job seen over the `seconds` (labels pod, pid, transport).
  std::string Transports(int64_t seconds) const;
  // Recorded only. Range: the bitmask where it is above 0, of `nodes` only (none: every node
  // of the job).
  std::string Bitmask(const std::vector<std::string>& nodes) const;
  // Expressions only. Range: the verdict's condition (the alert's expression) for the job.
  std::string Condition(const Verdict& v) const;
  // Range: the record's series (--plot).
  std::string Series(std::string_view record) const;

  bool recorded() const { return recorded_; }

 private:
  // The record narrowed to the job: its selector, or its expression in parentheses.
  std::string Of(std::string_view record) const;
  // `fn`_over_time of the record over `seconds`.
  std::string OverTime(std::string_view record, std::string_view fn, int64_t seconds) const;

  JobRef job_;
  bool recorded_;
  int64_t step_;
};

// Whether a node name (from Prometheus's answer: hostile) is 1 to 253 bytes of [A-Za-z0-9._-],
// which NodeRegex can put into a query.
bool SafeNodeName(std::string_view name);
// A PromQL regular expression matching exactly these nodes (SafeNodeName each; '.' escaped).
std::string NodeRegex(const std::vector<std::string>& nodes);

}  // namespace tocsin::jobview
