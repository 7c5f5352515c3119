#pragma once

#include <prometheus/collectable.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "audit/checks.h"
#include "base/finding.h"
#include "canary/history.h"
#include "canary/judge.h"
#include "canary/attribution.h"
#include "canary/planner.h"
#include "canary/runner_state.h"
#include "canary/spec.h"
#include "controller/cache.h"
#include "controller/event_poster.h"
#include "k8s/api_client.h"

namespace tocsin::controller {

struct CanaryOptions {
  bool enabled = false;
  canary::CanaryConfig job;     // what each canary asks for (--canary-*)
  canary::JudgeOptions judge;   // --canary-pending-deadline, --canary-expect, --canary-min-busbw
  std::chrono::seconds interval{3600};      // --canary-interval: a round starts this often
  // --canary-stale-after; 0: 3 intervals times the rounds it takes to go round every fabric node
  // (fabric nodes / max_nodes), so that a large cluster is not stale by construction.
  std::chrono::seconds stale_after{0};
  size_t max_nodes = 8;                     // --canary-max-nodes at once
  std::string topology_label;               // --topology-label (else the well-known keys)
  std::string env_from;                     // --canary-env-from KIND/NS/NAME
  std::string state_name = "tocsin-canary";  // the anchor ConfigMap (state, owner of the rest)
  std::chrono::milliseconds tick{2000};     // how often a round in flight is looked at
  uint64_t seed = 0;                        // 0: from the clock
};

// The canaries, run by the controller's leader (falco-style named steps in Run): Adopt (the
// anchor ConfigMap with the history, the ranks' token Secret, a round left by an earlier leader
// from its Jobs' labels), Plan (disjoint pairs of idle fabric nodes, canary/planner.h), Create
// (rank 0's Job of every pair; rank 1's once rank 0 runs and has an IP), Judge (each pair's
// stage, canary/judge.h: a result for the history, an Event on the Job, the Jobs deleted) and
// Publish (findings from the history for the controller's tracker, and metrics). Followers read
// the history every resync so that their findings match the leader's.
class CanaryRunner {
 public:
  CanaryRunner(CanaryOptions options, std::unique_ptr<k8s::ApiClient> client,
               const ObjectCache* cache, audit::Options audit, std::function<bool()> leader,
               EventPoster* poster, std::string instance, std::function<void()> changed);
  ~CanaryRunner();

  void Start();
  void Stop();
  // The canary.* findings now (the controller's evaluation adds them to the audit's).
  std::vector<Finding> Findings() const;
  std::shared_ptr<prometheus::Collectable> collectable();

  class Metrics;

 private:
  struct RankJob {
    std::string name, uid;
    std::optional<TimePoint> created;
    bool pod_seen = false;  // a pod of it was seen (one gone since was preempted or deleted)
  };
  struct PairRun {
    int index = 0;
    std::string a, b;  // rank 0's and rank 1's nodes
    std::string block_a, block_b;
    std::string why;
    RankJob ranks[2];
    bool judged = false;
  };
  struct Round {
    std::string id;
    TimePoint started{};
    std::vector<PairRun> pairs;
  };

  void Run();
  void Step(TimePoint now);
  Status Adopt(TimePoint now);
  Status LoadState();
  Status SaveState();
  void Plan(TimePoint now);
  void Advance(TimePoint now);
  Status CreateRank(PairRun& pair, int rank, const std::string& coordinator_ip, TimePoint now);
  // Judged: the result (not for a fault of the canary itself) goes to `results` and the Event is
  // queued; the caller saves the history, then deletes the Jobs.
  void Finish(PairRun& pair, const canary::Judgement& j, TimePoint now,
              std::vector<canary::PairResult>& results);
  void DeleteJob(const std::string& name);
  // Messages of the Events with `reason` about the object `name` in the canary namespace (cached
  // for 10 s).
  std::vector<std::string> EventsAbout(const std::string& name, const std::string& reason);
  // Reads --canary-env-from again (each round): the last good read stays when it fails.
  Status ReadReference();
  // The coverage window: --canary-stale-after, else derived from the fleet (see CanaryOptions).
  std::chrono::seconds Window(size_t fabric_nodes) const;
  // Nodes where a non-canary pod holds a GPU or an RDMA resource.
  std::set<std::string> BusyNodesIn(const k8s::Snapshot& s) const;
  void Rebuild(TimePoint now);  // findings and metrics from the history
  // The fabric nodes with their blocks; with `eligible`, also those idle and Ready now.
  std::vector<canary::NodeInfo> FabricNodes(std::vector<canary::NodeInfo>* eligible) const;
  // Each pair's topology blocks, once per round (a result is recorded with them).
  static void SetBlocks(Round& round, const std::vector<canary::NodeInfo>& all);
  void SetupProblem(const std::string& what);

  CanaryOptions options_;
  std::unique_ptr<k8s::ApiClient> client_;
  const ObjectCache* cache_;
  audit::Options audit_;
  std::function<bool()> leader_;
  EventPoster* poster_;
  std::string instance_;
  std::function<void()> changed_;
  std::shared_ptr<Metrics> metrics_;

  std::atomic<bool> stop_{false};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::thread thread_;

  // The runner thread's own state.
  bool adopted_ = false;
  std::string owner_uid_, state_version_;
  canary::History history_;
  canary::RunnerState state_;  // faults of the canary itself, details, first seen, last round
  bool reference_read_ = false;
  std::optional<Round> round_;
  std::chrono::seconds window_{0};  // the coverage window at the last plan
  std::string setup_problem_;
  std::optional<TimePoint> setup_since_;
  std::chrono::steady_clock::time_point last_load_{};
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, std::vector<std::string>>>
      events_cache_;
  uint64_t rounds_ = 0;

  mutable std::mutex mu_;  // what other threads read
  std::vector<Finding> findings_;
};

}  // namespace tocsin::controller
