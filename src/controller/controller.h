#pragma once

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/metrics_server.h"
#include "controller/admission_server.h"
#include "audit/checks.h"
#include "controller/cache.h"
#include "controller/canary_runner.h"
#include "controller/drift_watch.h"
#include "controller/event_poster.h"
#include "controller/informer.h"
#include "controller/lease.h"
#include "controller/log.h"
#include "controller/policy_params.h"
#include "controller/tracker.h"
#include "k8s/api_client.h"
#include "k8s/kubeconfig.h"

namespace tocsin::controller {

struct ControllerOptions {
  std::string listen_host = "0.0.0.0";
  int listen_port = 9465;
  k8s::KubeconfigOptions kubeconfig;
  k8s::ClientOptions client;
  audit::Options audit;  // --device-plugin, --fabric-nodes, ... (now and plugin_config are set here)
  std::chrono::milliseconds settle{1000};    // at most one evaluation per settle after changes
  std::chrono::milliseconds resync{300000};  // at least one evaluation this often
  // A finding gone this long is cleared (a Normal Event); back before, it never left.
  std::chrono::milliseconds clear_after{30000};
  bool leader_elect = false;
  LeaseOptions lease;
  bool events = true;
  std::string event_namespace = "default";  // Events about cluster-scoped objects (Nodes)
  InformerOptions informer;
  // Set (from a signal handler) to stop: every request in flight aborts within about a second.
  const std::atomic<bool>* stop = nullptr;
  size_t max_events_per_evaluation = 50;  // more transitions at once are counted, not posted
  size_t max_state_bytes = 200 << 10;     // the Lease annotation (the API allows 256 KiB in all)
  CanaryOptions canary;                   // --canary-* (off unless --canary)
  AdmissionOptions admission;             // --admission-listen (port 0: no webhook)
  PolicyParamsOptions policy_params;      // --policy-params (no name: off)
  DriftOptions drift;                     // --drift-* (off without --drift-baseline)
};

// A finding as /metrics shows it (no message or evidence: a scrape copies nothing big).
struct PublishedFinding {
  std::string check;
  Severity severity = Severity::kInfo;
  std::string subject;
  std::optional<TimePoint> since;
};

// What an evaluation left for /metrics.
struct Published {
  std::vector<PublishedFinding> findings;
  bool evaluated = false;
  TimePoint last_evaluation{};
  int64_t state_dropped = 0;
  std::vector<std::string> unknown;  // check ids that cannot be decided now (-1)
};

// `tocsin controller`: the cluster audit, always on, as named steps. Discover (credentials, and
// the training kinds whose CRDs exist), StartHttp (/metrics, /healthz, /readyz), Loop (informers
// and leader election started; the audit's checks evaluated on the cache after changes,
// coalesced by `settle`, and every `resync`; Events on transitions from the leader only; until
// a byte arrives on stop_fd) and Shutdown (informers stopped, a held Lease released).
class Controller {
 public:
  explicit Controller(ControllerOptions options);
  ~Controller();

  Status Discover();
  Status StartHttp();
  Status Loop(int stop_fd);
  void Shutdown();

  int port() const { return server_ ? server_->port() : 0; }
  int admission_port() const { return admission_ ? admission_->port() : 0; }
  // The check ids /metrics gives a status: the audit's, and the canaries' and drift's when they
  // run.
  std::vector<std::string> CheckIds() const;

  class Collector;

 private:
  void Evaluate();
  // True when what was read differs from what the cache had.
  bool FetchPluginConfigs(bool force);
  Status AddInformer(const Resource& r);
  void RetryDiscovery();
  void Wake();
  void CountRequest(const std::string& method, const std::string& path, long status);
  Result<std::unique_ptr<k8s::ApiClient>> NewClient();

  ControllerOptions options_;
  k8s::ClusterAccess access_;
  std::vector<Resource> resources_;
  ObjectCache cache_;
  std::mutex informers_mu_;  // informers_ grows when discovery finds a kind later
  std::vector<std::unique_ptr<Informer>> informers_;
  std::vector<std::string> undiscovered_;  // discovery failed: tried again every resync
  std::vector<std::string> absent_;        // not served: looked for again every hour
  int resyncs_ = 0;
  std::unique_ptr<EventPoster> poster_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<CanaryRunner> canary_;
  std::unique_ptr<DriftWatch> drift_;
  std::unique_ptr<k8s::ApiClient> client_;  // the evaluation thread's: ConfigMaps, Events
  FindingTracker tracker_;
  bool events_armed_ = false;
  bool first_done_ = false;  // transitions are posted once the previous state is known
  std::set<std::string> wanted_configs_;
  std::chrono::steady_clock::time_point configs_at_{};

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<agent::MetricsServer> server_;
  std::unique_ptr<AdmissionServer> admission_;  // --admission-listen
  std::unique_ptr<PolicyParamsWriter> params_;  // --policy-params
  std::shared_ptr<Collector> collector_;
  prometheus::Counter* evaluations_ = nullptr;
  prometheus::Histogram* evaluation_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* events_family_ = nullptr;
  prometheus::Counter* events_dropped_ = nullptr;
  prometheus::Family<prometheus::Counter>* requests_family_ = nullptr;

  int wake_pipe_[2] = {-1, -1};
  std::mutex pending_mu_;
  std::optional<std::string> pending_restore_;  // from the elector's thread
  std::optional<bool> pending_leader_;
  bool leader_ = false;  // as the evaluation thread knows it
};


}  // namespace tocsin::controller
