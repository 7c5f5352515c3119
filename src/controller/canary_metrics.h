#pragma once

#include <prometheus/collectable.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "controller/canary_runner.h"

namespace tocsin::controller {

// The canaries' series (docs/METRICS.md): coverage over the window, each fabric node's last
// pass, how long the oldest canary rank has waited to run, and rounds' outcomes.
class CanaryRunner::Metrics : public prometheus::Collectable {
 public:
  void CountRun(const std::string& outcome);
  // A judged pair: counted with the next SetCoverage, under the same lock, so that a scrape never
  // sees a pass counted before the last-pass times and coverage it produced.
  void CountJudged(const std::string& outcome);
  void SetPending(double seconds);
  void SetFabric(size_t fabric, size_t idle);
  void SetCoverage(double nodes, double block_pairs, std::map<std::string, double> last_pass);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mu_;
  std::map<std::string, double> runs_;
  std::vector<std::string> judged_;  // counted at the next SetCoverage
  double pending_ = 0;
  double fabric_ = 0, idle_ = 0;
  double node_ratio_ = 0, block_pair_ratio_ = 0;
  std::map<std::string, double> last_pass_;
};

}  // namespace tocsin::controller
