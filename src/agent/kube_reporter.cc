#include "agent/kube_reporter.h"

#include <condition_variable>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "audit/checks.h"
#include "base/strings.h"
#include "k8s/events.h"
#include "k8s/fabric_facts.h"

namespace tocsin::agent {
namespace {

using nlohmann::json;

bool IsOurs(const std::string& type) {
  return type == kRdmaFabricDegraded || type == kSharedStorageDegraded ||
         type == kGpuNicAffinityBroken || type == kTocsinChecksStale;
}

// A node's annotation `key`, empty when it has none (or the answer has no such shape).
std::string AnnotationOf(const json& node, const char* key) {
  if (!node.is_object()) return "";
  auto meta = node.find("metadata");
  if (meta == node.end() || !meta->is_object()) return "";
  auto annotations = meta->find("annotations");
  if (annotations == meta->end() || !annotations->is_object()) return "";
  auto it = annotations->find(key);
  return it != annotations->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

KubeReporter::KubeReporter(std::unique_ptr<KubeClient> client, KubeOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

Status KubeReporter::Discover() {
  std::string path = "/api/v1/nodes/" + options_.node_name;
  auto body = client_->Get(path);
  if (!body.ok()) return body.status();
  json node = json::parse(*body, nullptr, false);
  if (!node.is_object()) {
    return Status::ParseError("GET " + path + ": the answer is not a JSON object");
  }
  uid_ = node.value("/metadata/uid"_json_pointer, std::string());
  const json conditions = node.value("/status/conditions"_json_pointer, json::array());
  for (const auto& c : conditions) {
    if (!c.is_object()) continue;
    std::string type = c.value("type", "");
    if (!IsOurs(type)) continue;
    NodeCondition nc;
    nc.type = type;
    nc.status = c.value("status", "");
    nc.reason = c.value("reason", "");
    nc.message = c.value("message", "");
    auto t = ParseRfc3339(c.value("lastTransitionTime", ""));
    nc.last_transition = t.value_or(Clock::now());
    current_[type] = nc;
  }
  node_facts_ = AnnotationOf(node, k8s::kFabricFactsAnnotation);
  const json taints = node.value("/spec/taints"_json_pointer, json::array());
  tainted_ = false;
  for (const auto& t : taints) {
    if (t.is_object() && t.value("key", "") == options_.taint_key) tainted_ = true;
  }
  return Status::Ok();
}

std::string KubeReporter::AffectedPods(const std::string& type) {
  if (type == kTocsinChecksStale) return "";
  k8s::Snapshot snap;
  Status st = client_->List("/api/v1/pods?fieldSelector=spec.nodeName%3D" + options_.node_name +
                                "%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed",
                            "Pod", snap);
  if (!st.ok()) {
    ++errors_;
    if (!pods_error_logged_) {
      pods_error_logged_ = true;
      std::cerr << FormatRfc3339(Clock::now()) << " tocsin agent: kubernetes: " << st.message()
                << " (Events will not name the pods)\n";
    }
    return "";
  }
  audit::Options rdma;
  std::vector<std::string> names;
  for (const auto& pod : snap.pods) {
    bool uses = false;
    for (const auto& c : pod.containers) {
      for (const auto& [resource, quantity] : c.requests) {
        bool is_rdma = audit::IsRdmaResource(resource, rdma);
        if (type == kRdmaFabricDegraded && is_rdma) uses = true;
        if (type == kGpuNicAffinityBroken && (is_rdma || resource == "nvidia.com/gpu")) uses = true;
      }
    }
    if (type == kSharedStorageDegraded && !pod.shared_volumes.empty()) uses = true;
    if (uses) names.push_back(pod.ns + "/" + pod.name);
  }
  if (names.empty()) return "";
  std::string out = "; pods on this node that use it: ";
  for (size_t i = 0; i < names.size() && i < 10; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 10) out += " (+" + std::to_string(names.size() - 10) + " more)";
  return out;
}

Status KubeReporter::PostEvent(const NodeCondition& c, const std::string& previous_status,
                               TimePoint now) {
  k8s::EventSpec event;
  event.ns = options_.event_namespace;
  event.api_version = "v1";
  event.kind = "Node";
  event.name = options_.node_name;
  event.uid = uid_;
  event.type = c.status == "True" ? "Warning" : "Normal";
  event.reason = c.reason;
  event.message = c.type + " is " + c.status +
                  (previous_status.empty() ? "" : " (was " + previous_status + ")") + ": " +
                  c.message + (c.status == "True" ? AffectedPods(c.type) : "");
  event.component = "tocsin-agent";
  event.instance = options_.node_name;
  event.time = now;
  k8s::EventPost post = k8s::EventRequest(event);
  auto r = client_->Send("POST", post.path, post.body, "application/json");
  if (!r.ok()) return r.status();
  ++events_;
  return Status::Ok();
}

Status KubeReporter::SyncTaint(bool want, const std::string& why) {
  if (tainted_ && *tainted_ == want) return Status::Ok();
  // Taints have no merge key: read, edit, and write the whole list guarded by resourceVersion.
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::string path = "/api/v1/nodes/" + options_.node_name;
    auto body = client_->Get(path);
    if (!body.ok()) return body.status();
    json node = json::parse(*body, nullptr, false);
    if (!node.is_object()) return Status::ParseError("GET " + path + ": not a JSON object");
    json taints = json::array();
    for (const auto& t : node.value("/spec/taints"_json_pointer, json::array())) {
      if (t.is_object() && t.value("key", "") != options_.taint_key) taints.push_back(t);
    }
    if (want) {
      taints.push_back({{"key", options_.taint_key}, {"value", why}, {"effect", "NoSchedule"}});
    }
    json patch = {{"metadata",
                   {{"resourceVersion", node.value("/metadata/resourceVersion"_json_pointer, "")}}},
                  {"spec", {{"taints", taints}}}};
    auto r = client_->Send("PATCH", path, patch.dump(), "application/strategic-merge-patch+json");
    if (r.ok()) {
      tainted_ = want;
      return Status::Ok();
    }
    if (r.status().message().find("conflict") == std::string::npos) return r.status();
  }
  return Status::Unavailable("nodes/" + options_.node_name + ": taint: 3 conflicts in a row");
}

Status KubeReporter::PublishFacts(const std::string& facts, TimePoint now) {
  if (facts == node_facts_) {
    facts_published_ = true;
    return Status::Ok();
  }
  facts_published_ = false;
  if (facts == dropped_facts_) return Status::Ok();  // said once; sent again when they change
  // A refusal (an admission policy, a 422) is not retried every reconcile: 30 s, doubling to
  // 10 min, so that thousands of nodes never hammer the API server with it.
  if (facts_retry_at_ && now < *facts_retry_at_) return Status::Ok();
  json patch = {{"metadata", {{"annotations", {{k8s::kFabricFactsAnnotation, facts}}}}}};
  std::string path = "/api/v1/nodes/" + options_.node_name + "/status";
  auto r = client_->Send("PATCH", path, patch.dump(), "application/strategic-merge-patch+json");
  if (!r.ok()) {
    ++errors_;
    facts_backoff_ = std::min<std::chrono::seconds>(
        std::chrono::minutes(10),
        facts_backoff_.count() == 0 ? std::chrono::seconds(30) : 2 * facts_backoff_);
    facts_retry_at_ = now + facts_backoff_;
    return r.status().WithPrefix("fabric facts (tried again in " +
                                 std::to_string(facts_backoff_.count()) + " s)");
  }
  facts_backoff_ = std::chrono::seconds(0);
  facts_retry_at_.reset();
  ++facts_patches_;
  json node = json::parse(*r, nullptr, false);
  if (AnnotationOf(node, k8s::kFabricFactsAnnotation) == facts) {
    node_facts_ = facts;
    facts_published_ = true;
    return Status::Ok();
  }
  dropped_facts_ = facts;
  ++facts_dropped_;
  if (!facts_drop_logged_) {
    facts_drop_logged_ = true;
    std::cerr << FormatRfc3339(Clock::now()) << " tocsin agent: kubernetes: PATCH " << path
              << " was answered without the annotation " << k8s::kFabricFactsAnnotation
              << ": this API server drops metadata written through the status subresource, so "
                 "tocsin diff will not see this node's fabric facts "
                 "(tocsin_agent_fabric_facts_dropped_total)\n";
  }
  return Status::Ok();
}

Status KubeReporter::Report(const std::vector<NodeCondition>& desired,
                            const std::vector<Finding>& findings, TimePoint now) {
  bool changed = false;
  for (const auto& c : desired) {
    auto it = current_.find(c.type);
    if (it == current_.end() || it->second.status != c.status || it->second.reason != c.reason ||
        it->second.message != c.message) {
      changed = true;
    }
  }
  bool heartbeat = !last_patch_ || now - *last_patch_ >= options_.heartbeat;
  Status first_error;
  if (changed || heartbeat) {
    std::string path = "/api/v1/nodes/" + options_.node_name + "/status";
    auto r = client_->Send("PATCH", path, ConditionsPatch(desired, now).dump(),
                           "application/strategic-merge-patch+json");
    if (!r.ok()) {
      ++errors_;
      return r.status();  // current_ stays: the next round retries the same transitions
    }
    ++patches_;
    last_patch_ = now;
    for (const auto& c : desired) {
      auto it = current_.find(c.type);
      std::string before = it == current_.end() ? "" : it->second.status;
      if (before != c.status && !(before.empty() && c.status == "False")) {
        if (Status st = PostEvent(c, before, now); !st.ok()) {
          ++errors_;
          if (first_error.ok()) first_error = st;
        }
      }
      current_[c.type] = c;
    }
  }
  if (options_.taint) {
    const Finding* worst = nullptr;
    for (const auto& f : findings) {
      if (f.severity >= options_.taint_severity && (!worst || f.severity > worst->severity)) {
        worst = &f;
      }
    }
    Status st = SyncTaint(worst != nullptr, worst ? ReasonFromCheck(worst->check) : "");
    if (!st.ok()) {
      ++errors_;
      if (first_error.ok()) first_error = st;
    }
  }
  return first_error;
}

struct KubeLoop::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<std::pair<std::vector<TaskState>, TimePoint>> pending;
  bool stop = false;
  bool exited = false;
  KubeCounters counters;
};

KubeLoop::KubeLoop(std::unique_ptr<KubeReporter> reporter, ConditionOptions conditions,
                   std::function<void(const std::string&)> log)
    : shared_(std::make_shared<Shared>()) {
  std::shared_ptr<KubeReporter> owned(std::move(reporter));
  thread_ = std::thread([shared = shared_, owned, conditions, log] {
    bool discovered = false;
    while (true) {
      std::unique_lock<std::mutex> lock(shared->mu);
      shared->cv.wait(lock, [&] { return shared->stop || shared->pending.has_value(); });
      if (shared->stop) break;
      auto [states, now] = std::move(*shared->pending);
      shared->pending.reset();
      lock.unlock();
      if (!discovered) {
        Status st = owned->Discover();
        discovered = st.ok();
        if (!discovered) log("kubernetes: " + st.message() + " (retrying every reconcile)");
      }
      if (discovered) {
        std::vector<NodeCondition> desired =
            EvaluateConditions(states, owned->current(), now, conditions);
        Status st = owned->Report(desired, CurrentFindings(states), now);
        if (!st.ok()) log("kubernetes: " + st.message());
        // Then the fabric facts, when the rdma task's last run read them and they changed.
        for (const auto& t : states) {
          if (t.name != "rdma" || !t.output || t.output->fabric_facts.empty()) continue;
          if (Status fst = owned->PublishFacts(t.output->fabric_facts, now); !fst.ok()) {
            log("kubernetes: " + fst.message());
          }
        }
      }
      lock.lock();
      shared->counters = {discovered,
                          owned->patches(),
                          owned->events(),
                          owned->errors(),
                          owned->facts_published(),
                          owned->facts_patches(),
                          owned->facts_dropped(),
                          owned->call_failures()};
    }
    std::lock_guard<std::mutex> guard(shared->mu);
    shared->exited = true;
    shared->cv.notify_all();
  });
}

KubeLoop::~KubeLoop() { Stop(std::chrono::milliseconds(500)); }

void KubeLoop::Submit(std::vector<TaskState> states, TimePoint now) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->pending.emplace(std::move(states), now);
  shared_->cv.notify_all();
}

void KubeLoop::Stop(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->stop = true;
  shared_->cv.notify_all();
  bool exited = shared_->cv.wait_for(lock, grace, [&] { return shared_->exited; });
  lock.unlock();
  if (exited) {
    thread_.join();
  } else {
    thread_.detach();  // in a request bounded by --request-timeout; the process exits first
  }
}

KubeCounters KubeLoop::counters() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->counters;
}

}  // namespace tocsin::agent
