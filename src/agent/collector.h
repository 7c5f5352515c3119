#pragma once

#include <prometheus/collectable.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent.h"

namespace tocsin::agent {

// On every scrape: the latest metric families of each task that ran kOk (merged by name), the
// per-check status, run time and duration, task run counts by outcome, the node conditions and
// the agent's own memory, CPU and Kubernetes writes. Reads only memory: no host access.
class Agent::Collector : public prometheus::Collectable {
 public:
  Collector(const Scheduler* scheduler, std::string node_name, TimePoint started);
  std::vector<prometheus::MetricFamily> Collect() const override;

  void SetConditions(const std::vector<NodeCondition>& conditions, const KubeCounters& kube);

 private:
  const Scheduler* scheduler_;
  std::string node_name_;
  TimePoint started_;
  mutable std::mutex mu_;
  std::vector<NodeCondition> conditions_;
  KubeCounters kube_;
};

// Resident set size and CPU time of this process (/proc/self/statm, getrusage).
struct SelfUsage {
  double resident_bytes = 0;
  double cpu_seconds = 0;
};
SelfUsage ReadSelfUsage();

}  // namespace tocsin::agent
