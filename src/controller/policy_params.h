#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <optional>
#include <string>

#include "base/time.h"
#include "k8s/api_client.h"
#include "policy/policy.h"

namespace tocsin::controller {

// --policy-params NAMESPACE/NAME: the params ConfigMap of `tocsin policy`'s admission policies,
// kept current by the controller (issue 19: "requests rdma/foo, but this cluster advertises
// rdma/hca_shared_devices_a" must name what the cluster advertises now, not at install).
struct PolicyParamsOptions {
  std::string ns;    // empty: off
  std::string name;
  // After a failed write, the next try waits at least this long (evaluations can be frequent).
  std::chrono::milliseconds retry{30000};
  // Unchanged params are written again this often: a ConfigMap edited by hand, or re-applied
  // from stale `tocsin policy` output, is put right.
  std::chrono::milliseconds reassert{300000};
};

// Writes the ConfigMap's `data` (policy::ParamsData) with a merge patch when the params differ
// from what it last wrote, or the last write failed (retried after `retry`), and every
// `reassert`. It only patches:
// the ConfigMap comes from `tocsin policy`'s manifests, and the controller's extra right is
// `patch` on that one name (deploy/components/policy-params). Metrics:
// tocsin_controller_policy_params_writes_total{result="ok|error"} and
// tocsin_controller_policy_params_synced (1 when the ConfigMap holds the current params).
class PolicyParamsWriter {
 public:
  PolicyParamsWriter(PolicyParamsOptions options, prometheus::Registry& registry);

  // Called by the leader after an evaluation. Returns an error to log once per failure (empty
  // when nothing was tried or the write succeeded).
  std::string Publish(const policy::Params& params, k8s::ApiClient& client, TimePoint now);

  static std::string Path(const PolicyParamsOptions& o);

 private:
  PolicyParamsOptions options_;
  std::optional<std::string> written_;  // the data last written successfully
  TimePoint written_at_{};
  std::optional<TimePoint> failed_at_;
  std::string last_error_;
  prometheus::Family<prometheus::Counter>* writes_ = nullptr;
  prometheus::Gauge* synced_ = nullptr;
};

}  // namespace tocsin::controller
