#pragma once

#include <nlohmann/json.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "k8s/objects.h"

namespace tocsin::canary {

struct JudgeOptions {
  std::chrono::seconds pending_deadline{120};  // --canary-pending-deadline
  std::string expect = "rdma";                 // --canary-expect
  double min_busbw = 0;                        // GB/s
  // How long after rank 0 ended the other rank may still run before the pair is judged anyway.
  std::chrono::seconds finish_grace{90};
  std::chrono::seconds bench_timeout{60};  // --canary-timeout: how long a rank waits for the other
  // The resources the canaries request (--canary-resource): a rank the scheduler refuses for
  // lack of one of them blames its node; for any other reason (a taint, CPU, memory) it is the
  // canary's own problem (subject "canary"), never the node's.
  std::vector<std::string> resources;
};

// The canary pods' container (JobFor names it so).
inline constexpr char kBenchContainer[] = "bench";

// One rank of a canary pair as the cluster shows it.
struct RankView {
  int rank = 0;
  std::string planned_node;
  std::optional<TimePoint> job_created;  // nullopt: its Job does not exist (yet)
  const k8s::Pod* pod = nullptr;         // the Job's newest pod
  std::vector<std::string> sandbox_events;  // FailedCreatePodSandBox Events about that pod
  std::vector<std::string> job_events;      // FailedCreate Events about the Job (no pod made)
  // The planned node as the controller's cache shows it (nullopt: not in the cache): what it
  // advertises and since when it exists.
  std::optional<k8s::Node> node;
};

// What a pair (or one rank) comes to. Faults carry a canary.* check id.
struct Judgement {
  enum class Kind {
    kWait,         // still on its way
    kPass,         // both ranks ran and the path is what was expected
    kNodeFault,    // a stage that belongs to one node (scheduling, admission, sandbox, image)
    kPairFault,    // the pair ran and failed: either node or the path between them
    kCanaryFault,  // not a node's doing (a queue did not admit it, it was placed elsewhere)
  };
  Kind kind = Kind::kWait;
  std::string check;
  std::string node;  // kNodeFault
  std::string message;
  nlohmann::json evidence = nlohmann::json::object();
  std::optional<TimePoint> pending_since;  // the oldest rank still waiting to run
};

// A rank's stage: a fault once it is stuck past the deadline (or failed at the kubelet), else
// kWait (with pending_since while not running) — or kPass when its container ended (the pair
// judge reads how). `overdue` judges a rank that has not started as if its deadline had passed
// (its partner gave up waiting for it).
Judgement JudgeRank(const RankView& rank, const JudgeOptions& options, TimePoint now,
                    bool overdue = false);

// The pair: a stuck or failed stage of either rank, else, once rank 0 has ended (and rank 1 too,
// or finish_grace has passed since, unless rank 0 failed or rank 1 was never created), the
// verdicts in their termination messages, rank 0's first.
Judgement JudgePair(const RankView& r0, const RankView& r1, const JudgeOptions& options,
                    TimePoint now);

// Every canary check id (public API).
const std::vector<std::string>& CheckIds();

}  // namespace tocsin::canary
