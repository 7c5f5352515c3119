#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "audit/checks.h"
#include "base/status.h"
#include "k8s/objects.h"

namespace tocsin::policy {

// What the cluster offers, as the policies' params (a ConfigMap, docs/FORMATS.md "Admission
// policy params"): filled from a snapshot or the live API by ParamsFrom, or from flags.
struct Params {
  std::vector<std::string> rdma_resources;             // accepted beyond the known patterns
  std::vector<std::string> advertised_rdma_resources;  // what the nodes advertise (messages)
  std::string fabric_network;                          // "" : no network expectation
  std::string topology_label;                          // "" : no topology check
  bool ipc_lock_needed = true;
};

// The audit's options and the cluster's objects as params: --rdma-resource and the device
// plugins' pools, the RDMA resources fabric nodes advertise, --fabric-network, the topology label
// (ClusterTopologyLabel), --ipc-lock-not-needed.
Params ParamsFrom(const k8s::Snapshot& snapshot, const audit::Options& options);

// The params ConfigMap's `data` (docs/FORMATS.md "Admission policy params"): what Manifests
// writes and what `tocsin controller --policy-params` keeps current.
nlohmann::json ParamsData(const Params& params);

struct Options {
  std::string params_name = "tocsin-policy-params";
  std::string params_namespace = "tocsin";
  std::set<std::string> deny;  // check ids whose binding denies instead of warning
};

// The check ids the policies mirror (the audit's job checks that a job's spec decides), in
// catalogue order.
const std::vector<std::string>& PolicyCheckIds();

// One validation per check: its CEL expression (true: the job passes) and message expression.
struct Rule {
  std::string check;
  std::string expression;
  std::string message_expression;
};
// The variables every policy shares, in order (name, CEL), and the rules.
const std::vector<std::pair<std::string, std::string>>& Variables();
const std::vector<Rule>& Rules();

// The manifests: the params ConfigMap, then per check a ValidatingAdmissionPolicy and its
// binding (admissionregistration.k8s.io/v1). An unknown id in options.deny is an error.
Result<std::vector<nlohmann::json>> Manifests(const Params& params, const Options& options);

// Objects as one YAML stream ("---" between documents); CEL and other multi-line strings as
// literal blocks.
std::string ToYaml(const std::vector<nlohmann::json>& documents);

}  // namespace tocsin::policy
