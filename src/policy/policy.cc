#include "policy/policy.h"

#include <algorithm>

#include "audit/catalog.h"
#include "base/strings.h"

namespace tocsin::policy {
namespace {

using nlohmann::json;

// "job.rdma.not-requested" -> "tocsin-job-rdma-not-requested"
std::string PolicyName(const std::string& check) {
  std::string name = "tocsin-" + check;
  std::replace(name.begin(), name.end(), '.', '-');
  return name;
}

json MatchConstraints() {
  auto rule = [](const char* group, std::vector<std::string> resources) {
    return json{{"apiGroups", {group}},
                {"apiVersions", {"*"}},
                {"operations", {"CREATE"}},
                {"resources", resources}};
  };
  return {{"resourceRules",
           {rule("batch", {"jobs"}), rule("jobset.x-k8s.io", {"jobsets"}),
            rule("kubeflow.org", {"pytorchjobs", "mpijobs"}),
            rule("trainer.kubeflow.org", {"trainjobs"})}}};
}

json Labels() { return {{"app.kubernetes.io/part-of", "tocsin"}}; }

}  // namespace

Params ParamsFrom(const k8s::Snapshot& snapshot, const audit::Options& options) {
  Params p;
  std::set<std::string> extra(options.rdma_resources.begin(), options.rdma_resources.end());
  extra.insert(options.plugin_config.rdma_resources.begin(),
               options.plugin_config.rdma_resources.end());
  p.rdma_resources.assign(extra.begin(), extra.end());
  std::set<std::string> advertised;
  for (const auto& n : snapshot.nodes) {
    for (const auto& [name, qty] : n.allocatable) {
      if (audit::IsRdmaResource(name, options) && qty != "0") advertised.insert(name);
    }
  }
  p.advertised_rdma_resources.assign(advertised.begin(), advertised.end());
  p.fabric_network = options.fabric_network;
  p.topology_label = audit::ClusterTopologyLabel(snapshot, options);
  p.ipc_lock_needed = options.ipc_lock_needed;
  return p;
}

json ParamsData(const Params& params) {
  return {{"rdmaResources", Join(params.rdma_resources, ",")},
          {"advertisedRdmaResources", Join(params.advertised_rdma_resources, ",")},
          {"fabricNetwork", params.fabric_network},
          {"topologyLabel", params.topology_label},
          {"ipcLockNeeded", params.ipc_lock_needed ? "true" : "false"}};
}

const std::vector<std::string>& PolicyCheckIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const auto& r : Rules()) out.push_back(r.check);
    return out;
  }();
  return ids;
}

Result<std::vector<json>> Manifests(const Params& params, const Options& options) {
  for (const auto& id : options.deny) {
    const auto& ids = PolicyCheckIds();
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
      return Status::InvalidArgument("--deny: " + Quote(id) + " is not a policy check (one of " +
                                     Join(ids, ", ") + ")");
    }
  }
  std::vector<json> out;
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata",
                  {{"name", options.params_name},
                   {"namespace", options.params_namespace},
                   {"labels", Labels()}}},
                 {"data", ParamsData(params)}});
  json variables = json::array();
  for (const auto& [name, expr] : Variables()) {
    variables.push_back({{"name", name}, {"expression", expr}});
  }
  for (const auto& rule : Rules()) {
    std::string name = PolicyName(rule.check);
    const auto* info = audit::Catalog().Find(rule.check);
    out.push_back(
        {{"apiVersion", "admissionregistration.k8s.io/v1"},
         {"kind", "ValidatingAdmissionPolicy"},
         {"metadata",
          {{"name", name},
           {"labels", Labels()},
           {"annotations",
            {{"tocsin.io/check", rule.check},
             {"tocsin.io/meaning", info != nullptr ? info->meaning : ""}}}}},
         {"spec",
          {{"failurePolicy", "Ignore"},
           {"paramKind", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}}},
           {"matchConstraints", MatchConstraints()},
           // The pods' own controllers create a JobSet's Jobs and an MPIJob's launcher Job:
           // warnings belong to the object the user created.
           {"matchConditions",
            {{{"name", "top-object"},
              {"expression",
               "!has(object.metadata.ownerReferences) || "
               "object.metadata.ownerReferences.size() == 0"}}}},
           {"variables", variables},
           {"validations",
            {{{"expression", rule.expression},
              {"messageExpression", rule.message_expression},
              {"reason", "Invalid"}}}}}}});
    json actions = options.deny.count(rule.check) ? json{"Deny", "Audit"} : json{"Warn", "Audit"};
    out.push_back({{"apiVersion", "admissionregistration.k8s.io/v1"},
                   {"kind", "ValidatingAdmissionPolicyBinding"},
                   {"metadata", {{"name", name}, {"labels", Labels()}}},
                   {"spec",
                    {{"policyName", name},
                     {"paramRef",
                      {{"name", options.params_name},
                       {"namespace", options.params_namespace},
                       {"parameterNotFoundAction", "Allow"}}},
                     {"validationActions", actions}}}});
  }
  return out;
}

}  // namespace tocsin::policy
