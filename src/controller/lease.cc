#include "controller/lease.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/time.h"
#include "controller/log.h"

namespace tocsin::controller {

using json = nlohmann::json;

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  if (secs > t) secs -= std::chrono::seconds(1);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  std::string base = FormatRfc3339(secs);  // "...:SSZ"
  return base.substr(0, base.size() - 1) + fmt::format(".{:06d}Z", micros);
}

LeaderElector::LeaderElector(std::unique_ptr<k8s::ApiClient> client, LeaseOptions options,
                             std::function<void(bool, const std::string&)> on_change,
                             std::function<void(const std::string&)> on_observed)
    : client_(std::move(client)),
      options_(std::move(options)),
      on_change_(std::move(on_change)),
      on_observed_(std::move(on_observed)) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  client_->SetAbort(&stop_);
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  stop_ = true;  // also aborts a request in flight (SetAbort in Start)
  if (thread_.joinable()) thread_.join();
}

void LeaderElector::SetState(std::string state) {
  std::lock_guard lock(mu_);
  state_ = std::move(state);
}

void LeaderElector::MarkRenewed() {
  last_renew_ = std::chrono::steady_clock::now();
  last_renew_ns_ = last_renew_.time_since_epoch().count();
}

void LeaderElector::SetError(const std::string& e) {
  if (stop_) return;  // an aborted request at shutdown is no Lease error
  {
    std::lock_guard lock(mu_);
    if (error_ == e) return;
    error_ = e;
  }
  Log("Lease " + options_.ns + "/" + options_.name + ": " + e);  // logged when it changes
}

void LeaderElector::Run() {
  while (!stop_) {
    auto round = std::chrono::steady_clock::now();
    bool held = TryAcquireOrRenew();
    if (held) MarkRenewed();
    if (leader_ && !held && std::chrono::steady_clock::now() - last_renew_ >= options_.renew_deadline) {
      leader_ = false;
      if (on_change_) on_change_(false, "");
    }
    while (!stop_ && std::chrono::steady_clock::now() - round < options_.retry_period) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (leader_) {
    leader_ = false;
    // Handed over at once rather than left to expire: one request, bounded by half a second.
    client_->SetAbort(nullptr);
    client_->SetRequestTimeout(std::chrono::milliseconds(500));
    client_->SetAttempts(1);
    try {
      Release();
    } catch (const json::exception&) {
    }
    if (on_change_) on_change_(false, "");
  }
}

namespace {

std::string Str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

int64_t Int(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return 0;
  return j[key].get<int64_t>();
}

}  // namespace

bool LeaderElector::leader() const {
  if (!leader_.load()) return false;
  // Whatever the elector's thread is waiting on, a leader whose last renewal is older than
  // the renew deadline writes nothing more.
  auto last = std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(last_renew_ns_.load()));
  return std::chrono::steady_clock::now() - last < options_.renew_deadline;
}

bool LeaderElector::TryAcquireOrRenew() {
  try {
    return AcquireOrRenew();
  } catch (const json::exception& e) {  // a Lease whose fields are not what the API defines
    SetError(std::string("the Lease is malformed: ") + e.what());
    held_ = json();
    return false;
  }
}

bool LeaderElector::AcquireOrRenew() {
  std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns + "/leases/" +
                     options_.name;
  auto now = Clock::now();
  std::string state;
  {
    std::lock_guard lock(mu_);
    state = state_;
  }
  json spec = {{"holderIdentity", options_.identity},
               {"leaseDurationSeconds",
                std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(
                                         options_.lease_duration)
                                         .count())},
               {"acquireTime", FormatMicroTime(now)},
               {"renewTime", FormatMicroTime(now)},
               {"leaseTransitions", 0}};
  if (leader_ && !held_.is_null()) {
    // Renewing: the Lease as this replica last wrote it, PUT with its resourceVersion (one
    // request; a conflict means someone else wrote it: read it again below).
    json lease = held_;
    lease["spec"]["renewTime"] = FormatMicroTime(now);
    std::string written;
    {
      std::lock_guard lock(mu_);
      written = written_state_;
    }
    if (!state.empty() && state != written) {
      lease["metadata"]["annotations"][kFindingsAnnotation] = state;
    }
    auto put = client_->Send("PUT", path, lease.dump(), "application/json");
    held_ = json();
    if (put.ok()) {
      json back = json::parse(*put, nullptr, false);
      if (back.is_object() && back.contains("metadata") && back["metadata"].is_object() &&
          back.contains("spec") && back["spec"].is_object()) {
        held_ = std::move(back);
      }
      std::lock_guard lock(mu_);
      if (!state.empty()) written_state_ = state;
      error_.clear();
      return true;
    }
    SetError(put.status().message());
  }
  auto got = client_->Get(path);
  if (!got.ok() && got.status().code() == StatusCode::kNotFound) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.name}, {"namespace", options_.ns}}},
                  {"spec", spec}};
    if (!state.empty()) lease["metadata"]["annotations"][kFindingsAnnotation] = state;
    auto created = client_->Send("POST",
                                 "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns +
                                     "/leases",
                                 lease.dump(), "application/json");
    if (!created.ok()) {
      SetError(created.status().message());
      return false;
    }
    held_ = json::parse(*created, nullptr, false);
    if (!held_.is_object() || !held_.contains("spec")) held_ = json();
    {
      std::lock_guard lock(mu_);
      written_state_ = state;
    }
    MarkRenewed();  // before leader_: leader() must not read a stale renewal
    if (!leader_) {
      leader_ = true;
      if (on_change_) on_change_(true, "");
    }
    return true;
  }
  if (!got.ok()) {
    SetError(got.status().message());
    return false;
  }
  json lease = json::parse(*got, nullptr, false);
  if (!lease.is_object() || !lease.contains("metadata") || !lease["metadata"].is_object()) {
    SetError("GET " + path + ": not a Lease");
    return false;
  }
  json old = lease.contains("spec") && lease["spec"].is_object() ? lease["spec"] : json::object();
  std::string holder = Str(old, "holderIdentity");
  int64_t duration_s = std::clamp<int64_t>(Int(old, "leaseDurationSeconds"), 0, 3600);
  std::string record = holder + "|" + Str(old, "renewTime");
  auto steady = std::chrono::steady_clock::now();
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = steady;
  }
  std::string saved;
  const json& annotations = lease["metadata"].value("annotations", json::object());
  if (annotations.is_object() && annotations.contains(kFindingsAnnotation) &&
      annotations[kFindingsAnnotation].is_string()) {
    saved = annotations[kFindingsAnnotation].get<std::string>();
  }
  if (!lease["metadata"].contains("annotations") || !lease["metadata"]["annotations"].is_object()) {
    lease["metadata"]["annotations"] = json::object();
  }
  if (!holder.empty() && holder != options_.identity &&
      steady < observed_at_ + std::chrono::seconds(duration_s)) {
    held_ = json();
    if (on_observed_ && saved != observed_state_) {
      observed_state_ = saved;
      on_observed_(saved);
    }
    if (leader_) {  // someone else holds it now: never two writers
      leader_ = false;
      if (on_change_) on_change_(false, "");
    }
    return false;
  }
  bool taking = holder != options_.identity;
  if (!taking && !Str(old, "acquireTime").empty()) spec["acquireTime"] = Str(old, "acquireTime");
  int64_t transitions = Int(old, "leaseTransitions");
  spec["leaseTransitions"] = taking ? transitions + 1 : transitions;
  lease["spec"] = spec;
  // Only the leader writes the state, and only once it has taken over the saved one.
  bool write_state = !taking && leader_ && !state.empty() && state != saved;
  if (write_state) lease["metadata"]["annotations"][kFindingsAnnotation] = state;
  auto put = client_->Send("PUT", path, lease.dump(), "application/json");
  if (!put.ok()) {
    SetError(put.status().message());  // a conflict: another replica wrote first
    return false;
  }
  {
    std::lock_guard lock(mu_);
    written_state_ = write_state ? state : saved;
    error_.clear();
  }
  held_ = json::parse(*put, nullptr, false);
  if (!held_.is_object() || !held_.contains("spec") || !held_["metadata"].is_object()) {
    held_ = json();
  }
  observed_record_.clear();
  MarkRenewed();
  if (!leader_) {
    leader_ = true;
    if (on_change_) on_change_(true, saved);
  }
  return true;
}

void LeaderElector::Release() {
  std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns + "/leases/" +
                     options_.name;
  json lease = held_;
  if (lease.is_null()) {
    auto got = client_->Get(path);
    if (!got.ok()) return;
    lease = json::parse(*got, nullptr, false);
  }
  if (!lease.is_object() || !lease.contains("spec") || !lease["spec"].is_object() ||
      Str(lease["spec"], "holderIdentity") != options_.identity ||
      !lease.contains("metadata") || !lease["metadata"].is_object()) {
    return;
  }
  std::string state;
  {
    std::lock_guard lock(mu_);
    state = state_;
  }
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = FormatMicroTime(Clock::now());
  if (!state.empty()) lease["metadata"]["annotations"][kFindingsAnnotation] = state;
  (void)client_->Send("PUT", path, lease.dump(), "application/json");
}

}  // namespace tocsin::controller
