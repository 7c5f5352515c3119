#include "controller/canary_metrics.h"

#include "agent/families.h"

namespace tocsin::controller {

using prometheus::MetricType;

void CanaryRunner::Metrics::CountRun(const std::string& outcome) {
  std::lock_guard lock(mu_);
  runs_[outcome] += 1;
}

void CanaryRunner::Metrics::CountJudged(const std::string& outcome) {
  std::lock_guard lock(mu_);
  judged_.push_back(outcome);
}

void CanaryRunner::Metrics::SetPending(double seconds) {
  std::lock_guard lock(mu_);
  pending_ = seconds;
}

void CanaryRunner::Metrics::SetFabric(size_t fabric, size_t idle) {
  std::lock_guard lock(mu_);
  fabric_ = static_cast<double>(fabric);
  idle_ = static_cast<double>(idle);
}

void CanaryRunner::Metrics::SetCoverage(double nodes, double block_pairs,
                                        std::map<std::string, double> last_pass) {
  std::lock_guard lock(mu_);
  node_ratio_ = nodes;
  block_pair_ratio_ = block_pairs;
  last_pass_ = std::move(last_pass);
  for (const auto& outcome : judged_) runs_[outcome] += 1;
  judged_.clear();
}

std::vector<prometheus::MetricFamily> CanaryRunner::Metrics::Collect() const {
  std::lock_guard lock(mu_);
  agent::Families f;
  f.Family("tocsin_canary_coverage_ratio",
           "Share of fabric nodes (scope=node) and of topology block pairs (scope=block_pair) "
           "that a canary passed within the window (--canary-stale-after).",
           MetricType::Gauge)
      .Add({{"scope", "node"}}, node_ratio_)
      .Add({{"scope", "block_pair"}}, block_pair_ratio_);
  f.Family("tocsin_canary_last_pass_timestamp_seconds",
           "Unix time of the last canary that passed on the fabric node.", MetricType::Gauge);
  for (const auto& [node, t] : last_pass_) f.Add({{"node", node}}, t);
  f.Family("tocsin_canary_pending_seconds",
           "How long the oldest rank of the round in flight has waited to run (0: none waits).",
           MetricType::Gauge)
      .Add({}, pending_);
  f.Family("tocsin_canary_runs_total",
           "Canary pairs judged, by outcome: pass, a canary.* check id, or skipped (no round: "
           "fewer than two idle fabric nodes).",
           MetricType::Counter);
  f.Add({{"outcome", "pass"}}, runs_.count("pass") ? runs_.at("pass") : 0);
  for (const auto& [outcome, n] : runs_) {
    if (outcome != "pass") f.Add({{"outcome", outcome}}, n);
  }
  f.Family("tocsin_canary_fabric_nodes",
           "Fabric nodes the planner knows (state=all) and those idle at the last plan.",
           MetricType::Gauge)
      .Add({{"state", "all"}}, fabric_)
      .Add({{"state", "idle"}}, idle_);
  return f.Take();
}

}  // namespace tocsin::controller
