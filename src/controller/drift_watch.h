#pragma once

#include <prometheus/collectable.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "audit/checks.h"
#include "base/finding.h"
#include "base/status.h"
#include "base/time.h"
#include "controller/cache.h"
#include "drift/accept.h"
#include "drift/drift.h"
#include "k8s/api_client.h"
#include "k8s/kubeconfig.h"

namespace tocsin::controller {

// `tocsin controller --drift-baseline FILE`: `tocsin diff` always on, the baseline (a `tocsin
// snapshot` of staging) against the live cluster (README.md, "Drift, continuously").
struct DriftOptions {
  std::string baseline;  // --drift-baseline: a snapshot file
  // --drift-context [--drift-kubeconfig]: the baseline is that cluster, listed at every run
  // (read-only, as `tocsin diff ctx:NAME` lists it). One of the two, or drift is off.
  std::optional<k8s::KubeconfigOptions> baseline_cluster;
  std::string baseline_namespace;  // --drift-baseline-namespace: only its objects of the baseline
  std::string live_namespace;      // --drift-namespace: only its objects of the live cluster
  std::string accept;              // --drift-accept: the `tocsin diff --accept` YAML
  std::chrono::milliseconds interval{300000};  // --drift-interval
  std::vector<std::string> class_labels;       // --drift-class-label (diff's --class-label)
  size_t max_findings = 500;                   // more are counted, the least severe first
  // The controller's memory limit is 512 MiB and a run holds two parsed copies at once.
  size_t max_baseline_bytes = size_t{64} << 20;
};

bool DriftEnabled(const DriftOptions& o);
// What findings name as the baseline's source: the file, or "context NAME (kubeconfig FILE)".
std::string BaselineSource(const DriftOptions& o);

// The baseline cluster's client (--drift-context): its kubeconfig and context must resolve, and
// it must not be the cluster `live` names (the same cluster never drifts). Errors are usage
// errors naming --drift-context.
Result<std::unique_ptr<k8s::ApiClient>> BaselineClient(const DriftOptions& o,
                                                       const k8s::KubeconfigOptions& live,
                                                       const k8s::ClientOptions& client);

// What the baseline and the accept file give: read again at every run (a ConfigMap mount
// changes under the process; a baseline cluster changes by itself).
struct DriftInputs {
  k8s::Snapshot baseline;  // --drift-baseline-namespace applied
  std::vector<drift::Acceptance> accepted;
  TimePoint read_at{};
  // A baseline cluster's kinds that could not be listed (kind, error): compared on neither side.
  std::vector<std::pair<std::string, std::string>> unreadable;
};
// Reads the baseline and the accept file: the snapshot file (capped), or, when the baseline is a
// cluster, lists it through `baseline_client` (its nodes must be readable; another kind that
// cannot be listed goes to `unreadable`). An error names the flag and the source: for a file at
// startup it is a usage error (exit 2); later the last inputs read stay in use.
Result<DriftInputs> ReadDriftInputs(const DriftOptions& o, k8s::ApiClient* baseline_client = nullptr,
                                    const audit::Options& audit = {});

// One run, pure: the baseline against the live side. `unreadable` are the live side's kinds that
// could not be listed (kind, error), `inputs.unreadable` the baseline cluster's: they are compared
// on neither side and each is a drift.input.unreadable finding, as is `baseline_error` (a re-read
// that failed: the baseline read at `inputs.read_at` is still compared, so a finding never turns
// into "ok" because a file went away). Acceptances are applied at `now`; at most `max_findings` are kept, errors before
// warnings before info (`*dropped`: how many were not).
struct DriftSides {
  std::string baseline_source;  // the file
  std::string live_source;      // the API server
};
std::vector<Finding> JudgeDrift(const DriftInputs& inputs, const k8s::Snapshot& live,
                                const DriftSides& sides,
                                const std::vector<std::pair<std::string, std::string>>& unreadable,
                                const std::string& baseline_error, const drift::Options& options,
                                TimePoint now, size_t max_findings, size_t* dropped);

// The drift ids whose status is -1 while the baseline cannot be read (all but
// drift.input.unreadable, which is then failing).
std::vector<std::string> DriftCheckIds();

// The thread that runs JudgeDrift every `interval`: the live side from the informers' cache
// (nodes, DaemonSets, the jobs' templates of the kinds watched and synced), the rest listed by
// k8s::LoadFabric (network attachments, SR-IOV policies, NicClusterPolicies, CronJobs; the device
// plugins' ConfigMaps by GET), each kind that cannot be read reported, never fatal.
class DriftWatch {
 public:
  // `inputs`: what was read at startup (a baseline file), or nothing yet (a baseline cluster,
  // listed by the first run through `baseline_client`); `cached_kinds`: the kinds whose
  // informers have synced (their objects come from `cache`); `wake`: called after each run (the
  // controller evaluates and publishes).
  DriftWatch(DriftOptions options, std::optional<DriftInputs> inputs,
             std::unique_ptr<k8s::ApiClient> client, std::unique_ptr<k8s::ApiClient> baseline_client,
             const ObjectCache* cache, audit::Options audit,
             std::function<std::vector<std::string>()> cached_kinds, std::function<void()> wake);
  ~DriftWatch();

  void Start();
  void Stop();

  std::vector<Finding> Findings() const;
  // The drift ids that cannot be decided at `now` (-1): all of them until the first run and
  // when the last run is older than two intervals and a minute; all but
  // drift.input.unreadable (which says why) while the baseline cannot be read again.
  std::vector<std::string> UnknownChecks(TimePoint now) const;
  std::shared_ptr<prometheus::Collectable> collectable();

  // One run now (the thread's body; tests call it).
  void RunOnce();

  class Metrics;

 private:
  void Loop();

  DriftOptions options_;
  std::optional<DriftInputs> inputs_;  // the last read that succeeded (the run's thread only)
  std::unique_ptr<k8s::ApiClient> client_;
  std::unique_ptr<k8s::ApiClient> baseline_client_;  // a baseline cluster's, else null
  const ObjectCache* cache_;
  audit::Options audit_;
  std::function<std::vector<std::string>()> cached_kinds_;
  std::function<void()> wake_;
  std::shared_ptr<Metrics> metrics_;

  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  mutable std::mutex mu_;  // what other threads read
  std::vector<Finding> findings_;
  std::optional<TimePoint> last_run_;
  bool baseline_ok_ = true;
};

}  // namespace tocsin::controller
