#include "controller/lease.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/time.h"

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

void LeaderElector::Start() { thread_ = std::thread([this] { Run(); }); }

void LeaderElector::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void LeaderElector::SetState(std::string state) {
  std::lock_guard lock(mu_);
  state_ = std::move(state);
}

std::string LeaderElector::last_error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void LeaderElector::SetError(const std::string& e) {
  std::lock_guard lock(mu_);
  error_ = e;
}

void LeaderElector::Run() {
  while (!stop_) {
    auto round = std::chrono::steady_clock::now();
    bool held = TryAcquireOrRenew();
    if (held) last_renew_ = std::chrono::steady_clock::now();
    if (leader_ && !held && std::chrono::steady_clock::now() - last_renew_ >= options_.renew_deadline) {
      leader_ = false;
      if (on_change_) on_change_(false, "");
    }
    while (!stop_ && std::chrono::steady_clock::now() - round < options_.retry_period) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (leader_) {
    Release();
    leader_ = false;
    if (on_change_) on_change_(false, "");
  }
}

bool LeaderElector::TryAcquireOrRenew() {
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
    if (!leader_) {
      leader_ = true;
      ++transitions_;
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
  json old = lease.value("spec", json::object());
  if (!old.is_object()) old = json::object();
  std::string holder = old.value("holderIdentity", "");
  int64_t duration_s = old.value("leaseDurationSeconds", int64_t{0});
  std::string record = holder + "|" + old.value("renewTime", std::string());
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
  if (!taking) {
    spec["acquireTime"] = old.value("acquireTime", spec["acquireTime"].get<std::string>());
  }
  int64_t transitions = old.value("leaseTransitions", int64_t{0});
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
  if (!leader_) {
    leader_ = true;
    ++transitions_;
    if (on_change_) on_change_(true, saved);
  }
  return true;
}

void LeaderElector::Release() {
  std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns + "/leases/" +
                     options_.name;
  auto got = client_->Get(path);
  if (!got.ok()) return;
  json lease = json::parse(*got, nullptr, false);
  if (!lease.is_object() || !lease.contains("spec") || !lease["spec"].is_object() ||
      lease["spec"].value("holderIdentity", "") != options_.identity) {
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
