#include "controller/event_poster.h"

#include <fmt/format.h>

#include "audit/catalog.h"
#include "base/strings.h"
#include "controller/log.h"

namespace tocsin::controller {

std::optional<k8s::EventSpec> EventFor(const Transition& t, const ObjectCache& cache,
                                       const std::string& event_namespace,
                                       const std::string& instance) {
  const Finding& f = t.finding;
  k8s::EventSpec e;
  std::vector<std::string> parts;
  for (std::string_view part : Split(f.subject, '/')) parts.emplace_back(part);
  if (f.check.starts_with("daemonset.") && parts.size() == 2) {
    e.api_version = "apps/v1";
    e.kind = "DaemonSet";
    e.object_ns = parts[0];
    e.name = parts[1];
  } else if (f.check.starts_with("pod.") && parts.size() == 2) {
    e.api_version = "v1";
    e.kind = "Pod";
    e.object_ns = parts[0];
    e.name = parts[1];
  } else if ((f.check.starts_with("node.") || f.check == audit::kDaemonSetCoverage ||
              (f.check.starts_with("canary.") && f.subject != "canary")) &&
             parts.size() == 1) {
    e.api_version = "v1";
    e.kind = "Node";
    e.name = f.subject;
  } else if (f.check.starts_with("job.") && parts.size() == 3) {
    e.object_ns = parts[1];
    e.name = parts[2];
    if (parts[0] == "job") {
      e.api_version = "batch/v1";
      e.kind = "Job";
    } else if (parts[0] == "jobset") {
      e.api_version = "jobset.x-k8s.io/v1alpha2";
      e.kind = "JobSet";
    } else if (parts[0] == "kubeflow") {
      e.api_version = "kubeflow.org/v1";
      for (const char* kind : {"PyTorchJob", "MPIJob"}) {
        if (!cache.Uid(kind, e.object_ns, e.name).empty()) e.kind = kind;
      }
    }
  }
  if (e.kind.empty() || e.name.empty()) return std::nullopt;
  e.uid = cache.Uid(e.kind, e.object_ns, e.name);
  if (e.uid.empty()) return std::nullopt;
  e.ns = e.object_ns.empty() ? event_namespace : e.object_ns;
  e.type = t.appeared ? "Warning" : "Normal";
  e.reason = t.appeared ? "TocsinFinding" : "TocsinFindingCleared";
  std::string since = f.since ? FormatRfc3339(*f.since) : "unknown";
  if (t.appeared) {
    e.message = fmt::format("{} ({}, since {}): {}", f.check, SeverityName(f.severity), since,
                            f.message);
  } else {
    e.message = fmt::format("{} cleared (it had been active since {}){}", f.check, since,
                            f.message.empty() ? "" : ": " + f.message);
  }
  e.component = "tocsin-controller";
  e.instance = instance;
  e.time = Clock::now();
  return e;
}

EventPoster::EventPoster(std::unique_ptr<k8s::ApiClient> client, std::function<bool()> may_post,
                         prometheus::Family<prometheus::Counter>* posted,
                         prometheus::Counter* dropped, size_t capacity)
    : client_(std::move(client)),
      may_post_(std::move(may_post)),
      posted_(posted),
      dropped_(dropped),
      capacity_(capacity) {}

EventPoster::~EventPoster() { Stop(); }

void EventPoster::Start() {
  client_->SetAbort(&stop_);
  thread_ = std::thread([this] { Run(); });
}

void EventPoster::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < queue_.size(); ++i) dropped_->Increment();
  queue_.clear();
}

void EventPoster::Enqueue(k8s::EventSpec event) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= capacity_) {
      dropped_->Increment();
      return;
    }
    queue_.push_back(std::move(event));
  }
  cv_.notify_one();
}

void EventPoster::Run() {
  while (true) {
    k8s::EventSpec e;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_.load() || !queue_.empty(); });
      if (stop_) return;
      e = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!may_post_()) {  // lost the Lease meanwhile: the new leader speaks now
      dropped_->Increment();
      continue;
    }
    if (Status st = k8s::PostEvent(*client_, e); !st.ok()) {
      dropped_->Increment();
      if (!stop_) Log("event about " + e.kind + " " + e.name + " not posted: " + st.message());
      continue;
    }
    posted_->Add({{"type", e.type}}).Increment();
  }
}

}  // namespace tocsin::controller
