#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "k8s/api_client.h"

namespace tocsin::controller {

struct LeaseOptions {
  std::string ns = "tocsin";
  std::string name = "tocsin-controller";
  std::string identity;
  // client-go's defaults (kube-controller-manager's): a leader that cannot renew for
  // renew_deadline stops acting; another may take over once lease_duration has passed without a
  // renewal it observed.
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// The Lease's annotation where the leader keeps the active findings and their onsets.
inline constexpr const char* kFindingsAnnotation = "tocsin.io/findings";

// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection: every
// retry_period, GET the Lease; take it when it is free or its holder's renewals stopped for its
// leaseDurationSeconds (timed by this process's own clock from when it observed the last
// change, never by the remote timestamps), renew it while holding it (PUT with the
// resourceVersion read: a conflict loses the round), and give leadership up when renewals fail
// for renew_deadline. Stop releases a held Lease (holder cleared) so that another replica takes
// over at once. The leader also writes the findings state into the Lease's annotation.
class LeaderElector {
 public:
  // `on_change(true, saved)`: this replica became leader; `saved` is the findings state the
  // previous leader left in the annotation (empty when none). `on_change(false, "")`: lost it.
  // `on_observed(saved)`: while another replica leads, the state it saved changed (followers
  // keep the same onsets as the leader).
  LeaderElector(std::unique_ptr<k8s::ApiClient> client, LeaseOptions options,
                std::function<void(bool leader, const std::string& saved)> on_change,
                std::function<void(const std::string& saved)> on_observed = nullptr);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void Start();
  void Stop();
  // True while this replica holds the Lease and its last renewal is younger than the renew
  // deadline (false at once when renewals stall, whatever the thread is waiting on).
  bool leader() const;
  // The findings state to write with the next renewal (when it differs from what is there).
  void SetState(std::string state);

 private:
  void Run();
  // One round: acquire or renew. True when this replica holds the Lease after it.
  bool TryAcquireOrRenew();  // AcquireOrRenew, with a malformed Lease an error, never a crash
  bool AcquireOrRenew();
  void Release();
  void SetError(const std::string& e);
  void MarkRenewed();

  std::unique_ptr<k8s::ApiClient> client_;
  LeaseOptions options_;
  std::function<void(bool, const std::string&)> on_change_;
  std::function<void(const std::string&)> on_observed_;
  std::string observed_state_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> leader_{false};
  std::thread thread_;
  // What was last observed of another holder, and when (steady clock).
  std::string observed_record_;
  std::chrono::steady_clock::time_point observed_at_{};
  std::chrono::steady_clock::time_point last_renew_{};
  std::atomic<int64_t> last_renew_ns_{0};  // last_renew_, for leader() from other threads
  nlohmann::json held_;  // the Lease as this leader last wrote it (renewals PUT it directly)

  std::mutex mu_;
  std::string state_;          // to be written
  std::string written_state_;  // in the Lease now
  std::string error_;
};

// Kubernetes' MicroTime: RFC 3339 with exactly six fractional digits, as the API parses it.
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

}  // namespace tocsin::controller
