#include "controller/controller.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "audit/plugin_config.h"
#include "base/strings.h"
#include "controller/collector.h"
#include "controller/discovery.h"
#include "k8s/decode.h"
#include "k8s/events.h"

namespace tocsin::controller {

void Log(const std::string& what) {
  std::cerr << FormatRfc3339(Clock::now()) << " tocsin controller: " << what << "\n";
}

namespace {

// The verb of a request as the API server's audit log names it.
std::string Verb(const std::string& method, const std::string& path) {
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  if (path.find("watch=1") != std::string::npos) return "watch";
  if (path.find("limit=") != std::string::npos) return "list";
  return "get";
}

}  // namespace

Controller::Controller(ControllerOptions options) : options_(std::move(options)) {
  registry_ = std::make_shared<prometheus::Registry>();
  evaluations_ = &prometheus::BuildCounter()
                      .Name("tocsin_controller_evaluations_total")
                      .Help("Evaluations of the checks on the cached objects.")
                      .Register(*registry_)
                      .Add({});
  evaluation_seconds_ =
      &prometheus::BuildHistogram()
           .Name("tocsin_controller_evaluation_duration_seconds")
           .Help("Time to evaluate the checks on the cached objects.")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.05, 0.1, 0.25,
                                                            0.5, 1, 2.5, 5, 10});
  events_family_ = &prometheus::BuildCounter()
                        .Name("tocsin_controller_events_total")
                        .Help("Events posted about findings, by type (Warning, Normal).")
                        .Register(*registry_);
  events_family_->Add({{"type", "Warning"}});  // both series from the start, at 0
  events_family_->Add({{"type", "Normal"}});
  events_dropped_ = &prometheus::BuildCounter()
                         .Name("tocsin_controller_events_dropped_total")
                         .Help("Transitions not posted as Events: over the per-evaluation cap, "
                               "a subject with no object, or the API refused.")
                         .Register(*registry_)
                         .Add({});
  requests_family_ = &prometheus::BuildCounter()
                          .Name("tocsin_controller_api_requests_total")
                          .Help("Requests to the Kubernetes API by verb and HTTP status "
                                "(\"error\": no answer).")
                          .Register(*registry_);
}

Controller::~Controller() { Shutdown(); }

std::vector<std::string> Controller::CheckIds() const {
  std::vector<std::string> ids = audit::CheckIds();
  if (options_.canary.enabled) {
    ids.insert(ids.end(), canary::CheckIds().begin(), canary::CheckIds().end());
  }
  if (DriftEnabled(options_.drift)) {
    std::vector<std::string> drift = DriftCheckIds();
    ids.insert(ids.end(), drift.begin(), drift.end());
  }
  return ids;
}

void Controller::CountRequest(const std::string& method, const std::string& path, long status) {
  requests_family_
      ->Add({{"verb", Verb(method, path)}, {"code", status ? std::to_string(status) : "error"}})
      .Increment();
}

Result<std::unique_ptr<k8s::ApiClient>> Controller::NewClient() {
  k8s::ClientOptions client = options_.client;
  client.on_exchange = [this](const std::string& m, const std::string& p, long s) {
    CountRequest(m, p, s);
  };
  return k8s::ApiClient::Create(access_, client);
}

Status Controller::Discover() {
  // A baseline that cannot be read is a usage error now, not a quiet "no drift" later.
  // A baseline cluster's kubeconfig and context must resolve now; the cluster itself may be
  // unreachable for a while (drift.input.unreadable until it answers).
  std::optional<DriftInputs> drift_inputs;
  std::unique_ptr<k8s::ApiClient> drift_baseline_client;
  if (DriftEnabled(options_.drift)) {
    if (options_.drift.baseline_cluster) {
      TOCSIN_ASSIGN_OR_RETURN(drift_baseline_client,
                              BaselineClient(options_.drift, options_.kubeconfig, options_.client));
      drift_baseline_client->SetAbort(options_.stop);
    } else {
      auto in = ReadDriftInputs(options_.drift);
      if (!in.ok()) return Status::InvalidArgument(in.status().message());
      drift_inputs = std::move(*in);
    }
    cache_.KeepTemplates(true);
  }
  auto access = k8s::ResolveAccess(options_.kubeconfig, k8s::AccessEnvironment());
  if (!access.ok()) return access.status();
  access_ = *access;
  if (access_.insecure_skip_tls_verify) {
    Log("warning: TLS verification of " + access_.server + " is off (insecure-skip-tls-verify in " +
        access_.origin + ")");
  }
  TOCSIN_ASSIGN_OR_RETURN(client_, NewClient());
  client_->SetAbort(options_.stop);
  resources_ = CoreResources();
  // The training operators' kinds, when their CRDs are installed. A discovery that failed (not
  // a 404) is tried again at every resync; until then the job checks are unknown.
  CrdDiscovery crds = DiscoverCrds(*client_);
  for (const std::string& e : crds.errors) Log("discovery: " + e + " (tried again every resync)");
  resources_.insert(resources_.end(), crds.found.begin(), crds.found.end());
  undiscovered_ = crds.unknown;
  absent_ = crds.absent;
  configs_at_ = std::chrono::steady_clock::now();  // discovery was just done
  for (const Resource& r : resources_) TOCSIN_RETURN_IF_ERROR(AddInformer(r));
  if (options_.leader_elect) {
    TOCSIN_ASSIGN_OR_RETURN(auto client, NewClient());
    // One attempt per request, each bounded so that a round (at most three requests) fits in
    // the renew deadline, as client-go bounds its renewals.
    client->SetAttempts(1);
    client->SetRequestTimeout(std::max(std::chrono::milliseconds(500),
                                       std::min(options_.client.request_timeout,
                                                options_.lease.renew_deadline / 3)));
    elector_ = std::make_unique<LeaderElector>(
        std::move(client), options_.lease,
        [this](bool leader, const std::string& saved) {
          Log(leader ? "became the leader (Lease " + options_.lease.ns + "/" +
                           options_.lease.name + ")"
                     : "not the leader any more: Events stop");
          {
            std::lock_guard lock(pending_mu_);
            pending_leader_ = leader;
            if (leader) pending_restore_ = saved;
          }
          Wake();
        },
        [this](const std::string& saved) {
          {
            std::lock_guard lock(pending_mu_);
            pending_restore_ = saved;
          }
          Wake();
        });
  }
  if (options_.events) {
    TOCSIN_ASSIGN_OR_RETURN(auto client, NewClient());
    poster_ = std::make_unique<EventPoster>(
        std::move(client), [this] { return !elector_ || elector_->leader(); }, events_family_,
        events_dropped_);
  }
  if (options_.canary.enabled) {
    TOCSIN_ASSIGN_OR_RETURN(auto client, NewClient());
    canary_ = std::make_unique<CanaryRunner>(
        options_.canary, std::move(client), &cache_, options_.audit,
        [this] { return !elector_ || elector_->leader(); }, poster_.get(),
        options_.lease.identity, [this] { Wake(); });
  }
  if (DriftEnabled(options_.drift)) {
    TOCSIN_ASSIGN_OR_RETURN(auto client, NewClient());
    client->SetAbort(options_.stop);
    drift_ = std::make_unique<DriftWatch>(
        options_.drift, std::move(drift_inputs), std::move(client),
        std::move(drift_baseline_client), &cache_, options_.audit,
        [this] {
          std::vector<std::string> kinds;
          std::lock_guard lock(informers_mu_);
          for (const auto& inf : informers_) {
            if (inf->stats().synced) kinds.push_back(inf->resource().kind);
          }
          return kinds;
        },
        [this] { Wake(); });
  }
  std::vector<std::string> names;
  for (const auto& r : resources_) names.push_back(r.name);
  Log("API server " + access_.server + " (" + access_.origin + "); watching " + Join(names, ", "));
  return Status::Ok();
}

Status Controller::AddInformer(const Resource& r) {
  TOCSIN_ASSIGN_OR_RETURN(auto client, NewClient());
  auto inf = std::make_unique<Informer>(r, std::move(client), &cache_, options_.informer,
                                        [this] { Wake(); });
  std::lock_guard lock(informers_mu_);
  informers_.push_back(std::move(inf));
  return Status::Ok();
}

void Controller::RetryDiscovery() {
  // Kinds whose list answered 404 (an operator uninstalled) are looked for again with the rest.
  {
    std::lock_guard lock(informers_mu_);
    for (auto it = informers_.begin(); it != informers_.end();) {
      if ((*it)->stats().gone) {
        absent_.push_back((*it)->resource().name);
        (*it)->Stop();
        it = informers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // What failed is tried every resync; what is not served (an operator installed later), every
  // hour: one GET a group.
  std::vector<std::string> wanted = undiscovered_;
  if (++resyncs_ % 12 == 0) wanted.insert(wanted.end(), absent_.begin(), absent_.end());
  if (wanted.empty()) return;
  CrdDiscovery crds = DiscoverCrds(*client_, wanted);
  for (const std::string& e : crds.errors) Log("discovery: " + e);
  for (const Resource& r : crds.found) {
    if (!AddInformer(r).ok()) continue;
    std::lock_guard lock(informers_mu_);
    informers_.back()->Start();
    Log("watching " + r.name + " (found by discovery)");
    std::erase(absent_, r.name);
  }
  undiscovered_ = crds.unknown;
  for (const std::string& name : crds.absent) {
    if (std::find(absent_.begin(), absent_.end(), name) == absent_.end()) absent_.push_back(name);
  }
}

Status Controller::StartHttp() {
  server_ = std::make_unique<agent::MetricsServer>(
      registry_, "controller", "the informers have not synced and evaluated yet");
  collector_ = std::make_shared<Collector>(
      &informers_, &informers_mu_, &cache_,
      [this] { return !options_.leader_elect || (elector_ && elector_->leader()); },
      options_.resync, CheckIds());
  server_->AddCollectable(collector_);
  if (canary_) server_->AddCollectable(canary_->collectable());
  if (drift_) server_->AddCollectable(drift_->collectable());
  TOCSIN_RETURN_IF_ERROR(server_->Start(options_.listen_host, options_.listen_port));
  Log("serving /metrics, /healthz, /readyz on " + options_.listen_host + ":" +
      std::to_string(server_->port()));
  if (!options_.policy_params.name.empty()) {
    params_ = std::make_unique<PolicyParamsWriter>(options_.policy_params, *registry_);
  }
  if (options_.admission.port != 0) {
    admission_ = std::make_unique<AdmissionServer>(registry_);
    admission_->SetContext(options_.audit, options_.audit.topology_label);
    TOCSIN_RETURN_IF_ERROR(admission_->Start(options_.admission));
    Log("serving the admission webhook (HTTPS POST /validate) on " + options_.admission.host +
        ":" + std::to_string(admission_->port()));
  }
  return Status::Ok();
}

void Controller::Wake() {
  if (wake_pipe_[1] >= 0) (void)!write(wake_pipe_[1], "x", 1);
}

Status Controller::Loop(int stop_fd) {
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Internal(std::string("pipe: ") + std::strerror(errno));
  }
  if (options_.stop != nullptr && options_.stop->load()) return Status::Ok();  // during Discover
  {
    std::lock_guard lock(informers_mu_);
    for (auto& inf : informers_) inf->Start();
  }
  if (poster_) poster_->Start();
  if (elector_) {
    elector_->Start();
  } else {
    leader_ = true;
  }
  if (canary_) canary_->Start();
  if (drift_) drift_->Start();
  bool dirty = false;
  auto last = std::chrono::steady_clock::now() - options_.resync;
  bool evaluated = false;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    auto due = dirty ? last + options_.settle : last + options_.resync;
    // A finding that went away is cleared (and its Normal Event posted) when its clear_after
    // ends, not at the next resync.
    if (auto clear = tracker_.NextClear(options_.clear_after)) {
      auto in = std::chrono::duration_cast<std::chrono::milliseconds>(*clear - Clock::now());
      due = std::min(due, now + std::max(in, std::chrono::milliseconds(0)));
    }
    // The first evaluation waits for the informers the checks read (the others only name
    // Event targets); later ones never wait: an informer down makes its checks unknown instead.
    bool synced = evaluated;
    if (!synced) {
      synced = true;
      std::lock_guard lock(informers_mu_);
      for (const auto& inf : informers_) {
        if (inf->resource().checked) synced &= inf->stats().synced;
      }
    }
    int timeout_ms = 0;
    if (due > now) {
      timeout_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count() + 1);
    }
    if (!synced) timeout_ms = std::min(timeout_ms == 0 ? 200 : timeout_ms, 200);
    pollfd fds[2] = {{stop_fd, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int n = poll(fds, 2, timeout_ms);
    if (n < 0 && errno != EINTR) return Status::Internal(std::string("poll: ") + std::strerror(errno));
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP))) break;
    if (n > 0 && (fds[1].revents & POLLIN)) {
      char buf[256];
      while (read(wake_pipe_[0], buf, sizeof buf) > 0) {
      }
      dirty = true;
    }
    if (!synced) continue;
    now = std::chrono::steady_clock::now();
    bool clearing_due = false;
    if (auto clear = tracker_.NextClear(options_.clear_after)) clearing_due = Clock::now() >= *clear;
    if ((dirty && now >= last + options_.settle) || now >= last + options_.resync || clearing_due) {
      last = now;
      dirty = false;
      Evaluate();
      if (!evaluated) {
        evaluated = true;
        server_->SetReady(true);
        Log("ready: informers synced, first evaluation done");
      }
    }
  }
  return Status::Ok();
}

bool Controller::FetchPluginConfigs(bool force) {
  std::set<std::string> wanted = cache_.Read([&](const k8s::Snapshot& s) {
    std::set<std::string> out;
    for (const auto& ds : s.daemonsets) {
      if (!audit::IsDevicePlugin(ds, options_.audit)) continue;
      for (const auto& cm : ds.config_maps) out.insert(ds.ns + "/" + cm);
    }
    return out;
  });
  if (!force && wanted == wanted_configs_) return false;
  wanted_configs_ = wanted;
  k8s::Snapshot read;
  std::vector<std::string> errors;
  for (const std::string& ref : wanted) {
    size_t slash = ref.find('/');
    auto body = client_->Get("/api/v1/namespaces/" + ref.substr(0, slash) + "/configmaps/" +
                             ref.substr(slash + 1));
    Status st = body.ok() ? k8s::DecodeJson(*body, ref, read) : body.status();
    if (!st.ok() && st.code() != StatusCode::kNotFound) errors.push_back(st.message());
  }
  return cache_.SetConfigMaps(std::move(read.configmaps), std::move(errors));
}

void Controller::Evaluate() {
  auto started = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(pending_mu_);
    if (pending_leader_) {
      leader_ = *pending_leader_;
      pending_leader_.reset();
    }
    if (pending_restore_) {
      if (pending_restore_->empty()) {
        if (leader_) {
          // Leading with nothing saved (a new Lease): nothing was announced, so every active
          // finding gets its Warning now, however long it has been there.
          tracker_.Reset();
          events_armed_ = true;
        }
      } else if (Status st = tracker_.Restore(*pending_restore_); !st.ok()) {
        Log("the findings saved in the Lease cannot be read (" + st.message() +
            "): onsets start from now");
        if (leader_) events_armed_ = true;
      } else if (leader_) {
        events_armed_ = true;
      }
      pending_restore_.reset();
    }
    if (!leader_ && options_.leader_elect) events_armed_ = false;
  }
  // The device plugins' ConfigMaps before the first evaluation (a pool they declare must not
  // read as missing for a moment); afterwards they are refreshed after publishing.
  if (!first_done_) FetchPluginConfigs(true);
  audit::Options opt = options_.audit;
  opt.now = Clock::now();
  std::optional<policy::Params> params;
  std::vector<Finding> findings = cache_.Read([&](const k8s::Snapshot& s) {
    audit::Options with = audit::WithPluginConfig(s, opt);
    if (admission_) admission_->SetContext(with, audit::ClusterTopologyLabel(s, with));
    // Not from a cache missing a plugin's ConfigMap (a failed read): the pools it declares
    // would vanish from the params, and every job asking for them would be warned or denied.
    if (params_ && s.load_errors.empty()) params = policy::ParamsFrom(s, with);
    return audit::Run(s, with);
  });
  if (canary_) {
    std::vector<Finding> more = canary_->Findings();
    std::move(more.begin(), more.end(), std::back_inserter(findings));
  }
  if (drift_) {
    std::vector<Finding> more = drift_->Findings();
    std::move(more.begin(), more.end(), std::back_inserter(findings));
  }
  std::vector<Transition> transitions = tracker_.Update(findings, opt.now, options_.clear_after);
  // /metrics first: a slow Events API never delays a page.
  auto p = std::make_shared<Published>();
  if (elector_) {
    size_t dropped = 0;
    std::string state = tracker_.Serialize(options_.max_state_bytes, &dropped);
    if (leader_) elector_->SetState(state);
    p->state_dropped = static_cast<int64_t>(dropped);
  }
  p->findings.reserve(findings.size());
  for (Finding& f : findings) {
    p->findings.push_back({std::move(f.check), f.severity, std::move(f.subject), f.since});
  }
  findings.clear();
  p->evaluated = true;
  p->last_evaluation = opt.now;
  if (drift_) p->unknown = drift_->UnknownChecks(opt.now);
  collector_->Publish(std::move(p));
  if (!options_.leader_elect && !events_armed_) {
    events_armed_ = true;  // no saved state: what is active at start was announced before
  } else if (leader_ && events_armed_ && poster_) {
    size_t queued = 0;
    for (const Transition& t : transitions) {
      auto e = EventFor(t, cache_, options_.event_namespace, options_.lease.identity);
      if (!e || queued >= options_.max_events_per_evaluation) {
        events_dropped_->Increment();
        continue;
      }
      poster_->Enqueue(std::move(*e));
      ++queued;
    }
  }
  // The admission policies' params, by the leader (or the one replica), once /metrics has the
  // verdict: a patch only when they changed.
  if (params_ && params && (leader_ || !options_.leader_elect) && client_) {
    if (std::string e = params_->Publish(*params, *client_, opt.now); !e.empty()) Log(e);
  }
  evaluations_->Increment();
  evaluation_seconds_->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  // What may wait on the API comes after /metrics has the verdict: the training kinds'
  // discovery and the ConfigMaps (when the plugins changed, and every resync). A ConfigMap that
  // changed is evaluated again at once.
  first_done_ = true;
  bool resync = started - configs_at_ >= options_.resync;
  if (resync) {
    configs_at_ = started;
    RetryDiscovery();
  }
  if (FetchPluginConfigs(resync)) Wake();
}

void Controller::Shutdown() {
  {
    std::lock_guard lock(informers_mu_);
    for (auto& inf : informers_) inf->RequestStop();  // all at once: each aborts within ~1 s
  }
  if (canary_) canary_->Stop();  // before the poster it enqueues to
  if (drift_) drift_->Stop();
  if (poster_) poster_->Stop();
  {
    std::lock_guard lock(informers_mu_);
    for (auto& inf : informers_) inf->Stop();
  }
  if (elector_) elector_->Stop();            // releases a held Lease
  if (admission_) admission_->Stop();
  if (server_) server_->Stop();
  std::lock_guard lock(informers_mu_);
  informers_.clear();
  for (int& fd : wake_pipe_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

}  // namespace tocsin::controller
