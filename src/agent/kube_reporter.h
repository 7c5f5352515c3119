#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/conditions.h"
#include "agent/kube_client.h"
#include "base/finding.h"

namespace tocsin::agent {

struct KubeOptions {
  std::string node_name;
  std::string event_namespace = "default";  // where kubelet and node-problem-detector put them
  std::chrono::seconds heartbeat{60};       // re-patch unchanged conditions this often
  bool taint = false;                       // NoSchedule taint while a finding is critical
  std::string taint_key = "tocsin.io/degraded";
  Severity taint_severity = Severity::kCritical;
};

// Writes the agent's NodeConditions to nodes/<name>/status (strategic merge patch: conditions
// merge by type, others' conditions stay), posts an Event per transition, and optionally keeps a
// NoSchedule taint while a finding is at or above taint_severity.
class KubeReporter {
 public:
  KubeReporter(std::unique_ptr<KubeClient> client, KubeOptions options);

  // Reads the node: it must exist. Conditions of our types already there are the previous
  // state, so lastTransitionTime survives an agent restart.
  Status Discover();
  const std::map<std::string, NodeCondition>& current() const { return current_; }

  // Patches when a condition changed or the heartbeat is due; one Event per transition.
  Status Report(const std::vector<NodeCondition>& desired, const std::vector<Finding>& findings,
                TimePoint now);

  // Publishes the node's fabric facts (`facts`: the annotation tocsin.io/fabric's JSON) with a
  // strategic merge patch of nodes/<name>/status that carries only that annotation (the status
  // subresource keeps metadata: docs/FORMATS.md, "Fabric facts annotation"), when they differ
  // from what the node holds. The answer must hold them: a server that drops them is said once
  // in the log, counted, and not asked again until the facts change.
  // A failed PATCH is tried again after a backoff (30 s doubling to 10 min), not every round.
  Status PublishFacts(const std::string& facts, TimePoint now);

  uint64_t patches() const { return patches_; }
  uint64_t events() const { return events_; }
  uint64_t errors() const { return errors_; }
  bool facts_published() const { return facts_published_; }
  uint64_t facts_patches() const { return facts_patches_; }
  uint64_t facts_dropped() const { return facts_dropped_; }
  uint64_t call_failures() const { return client_->failures(); }

 private:
  Status PostEvent(const NodeCondition& c, const std::string& previous_status, TimePoint now);
  Status SyncTaint(bool want, const std::string& why);
  // "; pods on this node that use it: ns/a, ns/b" for a condition turning True: running or
  // pending pods here that request RDMA resources (RDMAFabricDegraded), GPUs or RDMA
  // (GPUNICAffinityBroken), or mount shared volumes (SharedStorageDegraded). Empty when none or
  // when the pods cannot be listed (then logged once).
  std::string AffectedPods(const std::string& type);

  std::unique_ptr<KubeClient> client_;
  KubeOptions options_;
  std::string uid_;
  std::map<std::string, NodeCondition> current_;
  std::optional<TimePoint> last_patch_;
  std::optional<bool> tainted_;
  uint64_t patches_ = 0, events_ = 0, errors_ = 0;
  bool pods_error_logged_ = false;
  std::string node_facts_;     // what the node's annotation holds (read, then as answered)
  std::string dropped_facts_;  // the facts a server answered without (not sent again)
  bool facts_published_ = false, facts_drop_logged_ = false;
  std::optional<TimePoint> facts_retry_at_;
  std::chrono::seconds facts_backoff_{0};
  uint64_t facts_patches_ = 0, facts_dropped_ = 0;
};

// Kubernetes writes seen by the agent, for its self metrics.
struct KubeCounters {
  bool connected = false;
  uint64_t patches = 0, events = 0, errors = 0;
  bool facts_published = false;  // the node holds this agent's current fabric facts
  uint64_t facts_patches = 0, facts_dropped = 0;
  uint64_t call_failures = 0;  // calls left without an answer (KubeClient::failures)
};

// Runs a KubeReporter on its own thread, so that a slow or unreachable API server (each request
// bounded by --request-timeout) never delays the agent's loop or its shutdown. Submit() hands
// over the latest task states (an older evaluation not yet written is dropped); the thread reads
// the node first (retrying each round until it can), then evaluates the conditions against what
// the node holds and reports them, and publishes the rdma task's fabric facts when they changed.
class KubeLoop {
 public:
  KubeLoop(std::unique_ptr<KubeReporter> reporter, ConditionOptions conditions,
           std::function<void(const std::string&)> log);
  ~KubeLoop();
  KubeLoop(const KubeLoop&) = delete;
  KubeLoop& operator=(const KubeLoop&) = delete;

  void Submit(std::vector<TaskState> states, TimePoint now);
  // Waits up to `grace` for an exchange in flight, then leaves the thread behind (it holds its
  // own state; the process is about to exit).
  void Stop(std::chrono::milliseconds grace);
  KubeCounters counters() const;

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace tocsin::agent
