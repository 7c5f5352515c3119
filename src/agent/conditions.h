#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/scheduler.h"
#include "base/finding.h"
#include "base/time.h"

namespace tocsin::agent {

// The state of one check id, as tocsin_check_status exports it.
struct CheckStatus {
  std::string check;
  std::string task;
  int value = -1;   // 1 ok, 0 failing (a finding at warning or above), -1 unknown
  std::string why;  // for 0 and -1: the worst finding's message or the task's error
  std::optional<TimePoint> last_run;
  double duration_s = 0;
};

// Per check id of every task (and any other id a task's findings carry). A task whose last run
// was not kOk makes all its checks unknown; a finding marked {"result":"unknown"} makes its
// check unknown unless another finding of the same check fails it.
std::vector<CheckStatus> EvaluateChecks(const std::vector<TaskState>& tasks);

// The findings of every task's last kOk run, sorted (worst first).
std::vector<Finding> CurrentFindings(const std::vector<TaskState>& tasks);

inline constexpr const char* kRdmaFabricDegraded = "RDMAFabricDegraded";
inline constexpr const char* kSharedStorageDegraded = "SharedStorageDegraded";
inline constexpr const char* kGpuNicAffinityBroken = "GPUNICAffinityBroken";
inline constexpr const char* kTocsinChecksStale = "TocsinChecksStale";

// The NodeCondition type a check id feeds (rdma.*, node.fabric.* -> RDMAFabricDegraded;
// storage.*, lustre.* -> SharedStorageDegraded; gpu.nic.affinity -> GPUNICAffinityBroken); empty
// for checks that feed none (gpu.count, gpu.nvml).
std::string ConditionTypeFor(std::string_view check);

// The mapping ConditionTypeFor follows: a check id, or "prefix.*" for every id under it.
struct ConditionRule {
  std::string_view pattern;
  const char* condition;
};
std::span<const ConditionRule> ConditionRules();
bool RuleMatches(std::string_view pattern, std::string_view check);

// A NodeCondition in node-problem-detector's form: status "True" means a problem.
struct NodeCondition {
  std::string type;
  std::string status;  // "True", "False" or "Unknown"
  std::string reason;  // CamelCase
  std::string message;
  TimePoint last_transition;
};

struct ConditionOptions {
  Severity min_severity = Severity::kError;  // findings below this do not set a condition True
  // A task is stale when its last kOk run is older than stale_factor x its interval + timeout.
  double stale_factor = 3;
};

// The four conditions. A condition is True when a finding of its checks is at or above
// min_severity, Unknown when none is but one of its checks is unknown, else False.
// TocsinChecksStale is True when any check is unknown or any task is stale. lastTransitionTime
// is kept from `previous` while the status stays; on a change to True it is the earliest `since`
// of the findings behind it (when they know it), else `now`.
std::vector<NodeCondition> EvaluateConditions(const std::vector<TaskState>& tasks,
                                              const std::map<std::string, NodeCondition>& previous,
                                              TimePoint now, const ConditionOptions& options);

// The strategic merge patch of nodes/<name>/status that sets `conditions` (merged by type).
nlohmann::json ConditionsPatch(const std::vector<NodeCondition>& conditions, TimePoint heartbeat);

// "rdma.port.down" -> "RdmaPortDown".
std::string ReasonFromCheck(std::string_view check);

}  // namespace tocsin::agent
