#include "controller/drift_watch.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "agent/families.h"
#include "base/strings.h"
#include "audit/plugin_config.h"
#include "controller/log.h"
#include "drift/catalog.h"
#include "k8s/decode.h"
#include "sys/env.h"

namespace tocsin::controller {

using prometheus::MetricType;

bool DriftEnabled(const DriftOptions& o) {
  return !o.baseline.empty() || o.baseline_cluster.has_value();
}

std::string BaselineSource(const DriftOptions& o) {
  if (!o.baseline_cluster) return o.baseline;
  std::string s = "context " + o.baseline_cluster->context;
  if (!o.baseline_cluster->kubeconfig.empty()) s += " (kubeconfig " + o.baseline_cluster->kubeconfig + ")";
  return s;
}

Result<std::unique_ptr<k8s::ApiClient>> BaselineClient(const DriftOptions& o,
                                                       const k8s::KubeconfigOptions& live,
                                                       const k8s::ClientOptions& client) {
  auto access = k8s::ResolveAccess(*o.baseline_cluster, k8s::AccessEnvironment());
  if (!access.ok()) return Status::InvalidArgument("--drift-context: " + access.status().message());
  // The live cluster as the baseline compares it with itself: "no drift", always.
  auto own = k8s::ResolveAccess(live, k8s::AccessEnvironment());
  if (own.ok() && own->server == access->server) {
    return Status::InvalidArgument(
        "--drift-context: " + access->origin + " is the cluster this controller watches (" +
        access->server + "): the baseline must be another one (give its kubeconfig with "
        "--drift-kubeconfig, not $KUBECONFIG)");
  }
  auto made = k8s::ApiClient::Create(*access, client);
  if (!made.ok()) return Status::InvalidArgument("--drift-context: " + made.status().message());
  return std::move(*made);
}

namespace {

// The baseline cluster, listed as `tocsin diff ctx:NAME` lists a side. Its nodes first: a
// baseline without them is no baseline (and an unreachable server fails here, once).
Status ListBaseline(k8s::ApiClient& client, const audit::Options& audit, DriftInputs& in) {
  const std::string where = "--drift-context: " + client.access().server;
  if (Status st = client.List("/api/v1/nodes", "Node", in.baseline); !st.ok()) {
    return Status(st.code(), where + ": " + st.message());
  }
  // No nodes (staging scaled to zero overnight, the wrong cluster): every class would be
  // missing on one side, a warning each, and production's drift unseen meanwhile.
  if (in.baseline.nodes.empty()) {
    return Status::Unavailable(where + ": lists no nodes (the copy listed before is compared)");
  }
  k8s::FabricLoad load;
  load.have = {"Node"};
  auto plugin = [&](const k8s::DaemonSet& ds) { return audit::IsDevicePlugin(ds, audit); };
  if (Status st = k8s::LoadFabric(client, in.baseline, plugin, &load); !st.ok()) {
    return Status(st.code(), where + ": " + st.message());
  }
  in.unreadable = std::move(load.unreadable);
  if (!in.baseline.load_errors.empty()) {
    in.unreadable.emplace_back("ConfigMap", Join(in.baseline.load_errors, "; "));
    in.baseline.load_errors.clear();
  }
  return Status::Ok();
}

}  // namespace

Result<DriftInputs> ReadDriftInputs(const DriftOptions& o, k8s::ApiClient* baseline_client,
                                    const audit::Options& audit) {
  DriftInputs in;
  if (o.baseline_cluster) {
    if (baseline_client == nullptr) return Status::Internal("--drift-context: no client");
    TOCSIN_RETURN_IF_ERROR(ListBaseline(*baseline_client, audit, in));
  } else {
    if (Status st = k8s::LoadFile(o.baseline, in.baseline, o.max_baseline_bytes); !st.ok()) {
      return Status(st.code(), "--drift-baseline " + st.message());
    }
    if (in.baseline.nodes.empty() && in.baseline.daemonsets.empty() &&
        in.baseline.networks.empty() && in.baseline.workloads.empty()) {
      return Status::InvalidArgument("--drift-baseline " + o.baseline +
                                     ": no Node, DaemonSet, network attachment or job template "
                                     "(is it a tocsin snapshot?)");
    }
  }
  if (!o.baseline_namespace.empty()) drift::KeepNamespace(in.baseline, o.baseline_namespace);
  std::vector<std::string>().swap(in.baseline.raw);
  if (!o.accept.empty()) {
    auto text = ReadRegularFile(o.accept, drift::kMaxAcceptBytes);
    if (!text.ok()) return Status(text.status().code(), "--drift-accept " + text.status().message());
    auto parsed = drift::ParseAcceptFile(*text);
    if (!parsed.ok()) {
      return Status(parsed.status().code(), "--drift-accept " + o.accept + ": " +
                                                parsed.status().message());
    }
    in.accepted = std::move(*parsed);
  }
  in.read_at = Clock::now();
  return in;
}

std::vector<Finding> JudgeDrift(const DriftInputs& inputs, const k8s::Snapshot& live,
                                const DriftSides& sides,
                                const std::vector<std::pair<std::string, std::string>>& unreadable,
                                const std::string& baseline_error, const drift::Options& options,
                                TimePoint now, size_t max_findings, size_t* dropped) {
  // A kind one side cannot read is left out of the other too: absent there is not absent in
  // the cluster.
  const k8s::Snapshot* baseline = &inputs.baseline;
  const k8s::Snapshot* current = &live;
  k8s::Snapshot trimmed, trimmed_live;
  if (!unreadable.empty() || !inputs.unreadable.empty()) {
    trimmed = inputs.baseline;
    for (const auto& [kind, error] : unreadable) drift::DropKind(trimmed, kind);
    for (const auto& [kind, error] : inputs.unreadable) drift::DropKind(trimmed, kind);
    baseline = &trimmed;
  }
  if (!inputs.unreadable.empty()) {
    trimmed_live = live;
    for (const auto& [kind, error] : inputs.unreadable) drift::DropKind(trimmed_live, kind);
    current = &trimmed_live;
  }
  drift::Side a{"baseline", sides.baseline_source, baseline};
  drift::Side b{"live", sides.live_source, current};
  drift::DiffResult result = drift::Diff(a, b, options);
  drift::ApplyAcceptances(result.findings, inputs.accepted, now);
  std::vector<Finding> out = std::move(result.findings);
  for (const auto& [kind, error] : unreadable) {
    Finding f = UnknownFinding(drift::kInputUnreadable, "live " + kind, sides.live_source,
                               Status::Unavailable(error));
    f.message = kind == "ConfigMap"
                    ? "tocsin cannot know whether the device plugins' configs drifted: their "
                      "ConfigMaps cannot be read (" + error + "); they are compared on neither side"
                    : "tocsin cannot know whether the " + kind + " objects drifted: they cannot "
                      "be listed (" + error + "); grant deploy/components/drift/drift-rbac.yaml, or "
                      "accept it";
    out.push_back(std::move(f));
  }
  for (const auto& [kind, error] : inputs.unreadable) {
    Finding f = UnknownFinding(drift::kInputUnreadable, "baseline " + kind, sides.baseline_source,
                               Status::Unavailable(error));
    f.message = "tocsin cannot know whether the " + kind + " objects drifted: the baseline "
                "cluster's cannot be read (" + error + "); they are compared on neither side: "
                "grant the baseline's identity the tocsin-diff ClusterRole of "
                "deploy/rbac/audit.yaml there";
    out.push_back(std::move(f));
  }
  if (!baseline_error.empty()) {
    Finding f = UnknownFinding(drift::kInputUnreadable, "baseline", sides.baseline_source,
                               Status::IoError(baseline_error));
    f.message = "the baseline cannot be read again (" + baseline_error +
                "): drift is judged against the copy read at " + FormatRfc3339(inputs.read_at);
    f.evidence["read_at"] = FormatRfc3339(inputs.read_at);
    out.push_back(std::move(f));
  }
  *dropped = 0;
  if (out.size() > max_findings) {
    std::stable_sort(out.begin(), out.end(), [](const Finding& x, const Finding& y) {
      if (x.severity != y.severity) return x.severity > y.severity;  // the worst first
      return std::tie(x.check, x.subject) < std::tie(y.check, y.subject);
    });
    // What the input itself says is kept whatever the cap: without it, what is left looks whole.
    auto keep = std::stable_partition(out.begin(), out.end(), [](const Finding& f) {
      return f.check == drift::kInputUnreadable;
    });
    size_t first = static_cast<size_t>(keep - out.begin());
    size_t limit = std::max(max_findings, first);
    *dropped = out.size() - limit;
    out.resize(limit);
  }
  return out;
}

std::vector<std::string> DriftCheckIds() {
  std::vector<std::string> ids;
  for (const auto& c : drift::Catalog().checks) ids.emplace_back(c.id);
  return ids;
}

// tocsin_controller_drift_*: what the runs did (docs/METRICS.md).
class DriftWatch::Metrics : public prometheus::Collectable {
 public:
  void Record(const std::string& outcome, TimePoint at, double seconds, bool baseline_up,
              TimePoint baseline_read_at, size_t dropped) {
    std::lock_guard lock(mu_);
    runs_[outcome] += 1;
    last_run_ = at;
    seconds_ = seconds;
    baseline_up_ = baseline_up;
    baseline_read_at_ = baseline_read_at;
    dropped_ = static_cast<double>(dropped);
  }
  void SetBaselineUp(bool up) {
    std::lock_guard lock(mu_);
    baseline_up_ = up;
  }
  void SetBaseline(TimePoint read_at) {
    std::lock_guard lock(mu_);
    baseline_read_at_ = read_at;
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard lock(mu_);
    agent::Families f;
    auto unix = [](TimePoint t) {
      return static_cast<double>(
          std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
    };
    f.Family("tocsin_controller_drift_runs_total",
             "Drift runs by outcome: ok, or incomplete (the baseline or a kind of the live side "
             "could not be read: drift.input.unreadable).",
             MetricType::Counter);
    for (const char* o : {"ok", "incomplete"}) {
      f.Add({{"outcome", o}}, runs_.count(o) ? runs_.at(o) : 0);
    }
    f.Family("tocsin_controller_drift_baseline_up",
             "1 when the last read of the baseline (--drift-baseline or --drift-context) and "
             "--drift-accept succeeded.",
             MetricType::Gauge)
        .Add({}, baseline_up_ ? 1 : 0);
    f.Family("tocsin_controller_drift_baseline_read_timestamp_seconds",
             "Unix time the baseline in use was read.", MetricType::Gauge)
        .Add({}, unix(baseline_read_at_));
    if (last_run_) {
      f.Family("tocsin_controller_drift_last_run_timestamp_seconds",
               "Unix time of the last drift run.", MetricType::Gauge)
          .Add({}, unix(*last_run_));
      f.Family("tocsin_controller_drift_run_duration_seconds",
               "Time the last drift run took (lists and ConfigMap reads included).",
               MetricType::Gauge)
          .Add({}, seconds_);
    }
    f.Family("tocsin_controller_drift_findings_dropped",
             "Drift findings left out at the last run (over the cap of 500, the least severe first).",
             MetricType::Gauge)
        .Add({}, dropped_);
    return f.Take();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, double> runs_;
  std::optional<TimePoint> last_run_;
  double seconds_ = 0;
  bool baseline_up_ = true;
  TimePoint baseline_read_at_{};
  double dropped_ = 0;
};

DriftWatch::DriftWatch(DriftOptions options, std::optional<DriftInputs> inputs,
                       std::unique_ptr<k8s::ApiClient> client,
                       std::unique_ptr<k8s::ApiClient> baseline_client, const ObjectCache* cache,
                       audit::Options audit,
                       std::function<std::vector<std::string>()> cached_kinds,
                       std::function<void()> wake)
    : options_(std::move(options)),
      inputs_(std::move(inputs)),
      client_(std::move(client)),
      baseline_client_(std::move(baseline_client)),
      cache_(cache),
      audit_(std::move(audit)),
      cached_kinds_(std::move(cached_kinds)),
      wake_(std::move(wake)),
      metrics_(std::make_shared<Metrics>()) {
  if (inputs_) {
    metrics_->SetBaseline(inputs_->read_at);
  } else {
    metrics_->SetBaselineUp(false);  // a baseline cluster not listed yet is not up
  }
}

DriftWatch::~DriftWatch() { Stop(); }

std::shared_ptr<prometheus::Collectable> DriftWatch::collectable() { return metrics_; }

void DriftWatch::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void DriftWatch::Stop() {
  {
    std::lock_guard lock(wait_mu_);
    stop_ = true;
  }
  wait_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<Finding> DriftWatch::Findings() const {
  std::lock_guard lock(mu_);
  return findings_;
}

std::vector<std::string> DriftWatch::UnknownChecks(TimePoint now) const {
  std::lock_guard lock(mu_);
  bool fresh = last_run_ && now - *last_run_ <= 2 * options_.interval + std::chrono::minutes(1);
  if (fresh && baseline_ok_) return {};
  std::vector<std::string> ids = DriftCheckIds();
  if (fresh) std::erase(ids, std::string(drift::kInputUnreadable));
  return ids;
}

void DriftWatch::Loop() {
  while (!stop_) {
    // The first run waits for the nodes and DaemonSets informers (the live side's bulk).
    std::vector<std::string> kinds = cached_kinds_();
    bool ready = std::find(kinds.begin(), kinds.end(), "Node") != kinds.end() &&
                 std::find(kinds.begin(), kinds.end(), "DaemonSet") != kinds.end();
    auto wait = std::chrono::milliseconds(200);
    if (ready) {
      RunOnce();
      wait = options_.interval;
    }
    std::unique_lock lock(wait_mu_);
    wait_cv_.wait_for(lock, wait, [&] { return stop_.load(); });
  }
}

void DriftWatch::RunOnce() {
  auto started = std::chrono::steady_clock::now();
  std::string baseline_error;
  if (auto in = ReadDriftInputs(options_, baseline_client_.get(), audit_); in.ok()) {
    inputs_ = std::move(*in);
  } else {
    if (baseline_client_ != nullptr && baseline_client_->aborted()) return;  // stopping
    baseline_error = in.status().message();
    Log("drift: " + baseline_error +
        (inputs_ ? " (the baseline read at " + FormatRfc3339(inputs_->read_at) + " stays in use)"
                 : " (drift cannot be judged until it is read)"));
  }
  // The live side: what the informers hold, and what only drift reads, listed now.
  k8s::FabricLoad load;
  load.have = cached_kinds_();
  k8s::Snapshot live = cache_->Read([&](const k8s::Snapshot& s) {
    k8s::Snapshot out;
    for (const std::string& kind : load.have) {
      if (kind == "Node") out.nodes = s.nodes;
      if (kind == "DaemonSet") out.daemonsets = s.daemonsets;
    }
    for (const auto& w : s.workloads) {
      if (std::find(load.have.begin(), load.have.end(), w.kind) != load.have.end()) {
        out.workloads.push_back(w);
      }
    }
    return out;
  });
  auto plugin = [&](const k8s::DaemonSet& ds) { return audit::IsDevicePlugin(ds, audit_); };
  Status st = k8s::LoadFabric(*client_, live, plugin, &load);
  if (!st.ok()) return;  // aborted: the controller stops
  // A device plugin's ConfigMap that could not be read (a 403, a 5xx) would read as its pools
  // gone: the ConfigMaps are then compared on neither side, and that is said.
  if (!live.load_errors.empty()) {
    for (const std::string& e : live.load_errors) Log("drift: " + e);
    load.unreadable.emplace_back("ConfigMap", Join(live.load_errors, "; "));
  }
  std::string live_source = client_->access().server;
  std::string baseline_source = BaselineSource(options_);
  if (!options_.live_namespace.empty()) {
    drift::KeepNamespace(live, options_.live_namespace);
    live_source += " (namespace " + options_.live_namespace + ")";
  }
  if (!options_.baseline_namespace.empty()) {
    baseline_source += " (namespace " + options_.baseline_namespace + ")";
  }
  for (const auto& [kind, error] : load.unreadable) Log("drift: cannot list " + kind + ": " + error);
  if (inputs_) {
    for (const auto& [kind, error] : inputs_->unreadable) {
      Log("drift: cannot list the baseline's " + kind + ": " + error);
    }
  }
  drift::Options opt;
  opt.class_labels = options_.class_labels;
  opt.audit = audit_;
  size_t dropped = 0;
  TimePoint now = Clock::now();
  std::vector<Finding> findings;
  if (inputs_) {
    findings = JudgeDrift(*inputs_, live, {baseline_source, live_source}, load.unreadable,
                          baseline_error, opt, now, options_.max_findings, &dropped);
  } else {
    // Never read (a baseline cluster not reached yet): nothing to compare, and that is said.
    Finding f = UnknownFinding(drift::kInputUnreadable, "baseline", baseline_source,
                               Status::Unavailable(baseline_error));
    f.message = "the baseline cannot be read (" + baseline_error + "): drift cannot be judged";
    findings.push_back(std::move(f));
  }
  for (Finding& f : findings) f.evidence = nlohmann::json::object();  // /metrics has no use for it
  {
    std::lock_guard lock(mu_);
    findings_ = std::move(findings);
    last_run_ = now;
    baseline_ok_ = baseline_error.empty();
  }
  bool complete = baseline_error.empty() && load.unreadable.empty() && inputs_ &&
                  inputs_->unreadable.empty();
  metrics_->Record(complete ? "ok" : "incomplete", now,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                   baseline_error.empty(), inputs_ ? inputs_->read_at : TimePoint{}, dropped);
  if (wake_) wake_();
}

}  // namespace tocsin::controller
