// What a canary's pods say, as the controller judges them: the scheduler's message in the
// PodScheduled condition (split at the first NUL) and the ranks' termination messages.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "canary/judge.h"
#include "canary/scheduler_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tocsin;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view sched = in.substr(0, nul);
  std::string_view verdict = nul == std::string_view::npos ? in : in.substr(nul + 1);
  canary::ParseSchedulerMessage(sched);
  TimePoint t0 = TimePoint(std::chrono::seconds(1'800'000'000));
  k8s::Pod pending;
  pending.created = t0;
  pending.phase = "Pending";
  pending.conditions.push_back({"PodScheduled", "False", "Unschedulable", std::string(sched), t0});
  canary::RankView r0{.rank = 0, .planned_node = "n0", .job_created = t0, .pod = &pending};
  canary::JudgeOptions o;
  canary::JudgePair(r0, {}, o, t0 + std::chrono::seconds(600));
  k8s::Pod ended[2];
  for (int r = 0; r < 2; ++r) {
    ended[r].node_name = r == 0 ? "n0" : "n1";
    ended[r].phase = "Failed";
    ended[r].created = t0;
    k8s::ContainerStatus st;
    st.exit_code = 1;
    st.finished = t0;
    st.termination_message = std::string(verdict);
    ended[r].statuses.push_back(st);
  }
  canary::RankView a{.rank = 0, .planned_node = "n0", .job_created = t0, .pod = &ended[0]};
  canary::RankView b{.rank = 1, .planned_node = "n1", .job_created = t0, .pod = &ended[1]};
  for (const char* expect : {"rdma", "tcp"}) {
    o.expect = expect;
    o.min_busbw = 1;
    canary::JudgePair(a, b, o, t0 + std::chrono::seconds(600));
  }
  return 0;
}
