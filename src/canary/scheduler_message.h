#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tocsin::canary {

// The scheduler's FailedScheduling text, as it puts it in a Pending pod's PodScheduled condition
// (pkg/scheduler/framework FitError.Error):
//   "0/4 nodes are available: 2 Insufficient rdma/hca_shared_devices_a, 2 node(s) didn't match
//    node selector."
// and since 1.24 followed by " preemption: 0/4 nodes are available: ...". The first part is read:
// nodes available, nodes in all, and each "COUNT REASON" cause. A pod can write its own status,
// so the text is capped and anything else is kept as it was, unparsed.
struct SchedulerMessage {
  bool parsed = false;
  int available = 0;
  int total = 0;
  std::vector<std::pair<std::string, int>> causes;  // in the scheduler's order
};

inline constexpr size_t kMaxSchedulerCauses = 32;
inline constexpr size_t kMaxSchedulerCause = 256;

SchedulerMessage ParseSchedulerMessage(std::string_view text);

}  // namespace tocsin::canary
