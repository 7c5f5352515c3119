#include "cli/policy_command.h"

#include <iostream>
#include <memory>

#include "audit/plugin_config.h"
#include "base/report.h"
#include "cli/daemon_flags.h"
#include "cli/report_flags.h"
#include "k8s/decode.h"
#include "policy/policy.h"

namespace tocsin::cli {
namespace {

struct PolicyFlags {
  std::vector<std::string> from;
  AuditCheckFlags checks;
  std::vector<std::string> deny;
  std::string params_name = "tocsin-policy-params";
  std::string params_namespace = "tocsin";
};

int RunPolicy(const PolicyFlags& f) {
  audit::Options options;
  if (Status st = f.checks.Apply(options); !st.ok()) return UsageError(st.message());
  k8s::Snapshot snapshot;
  for (const auto& path : f.from) {
    Status st = k8s::LoadFile(path, snapshot);
    if (!st.ok()) return UsageError("--from " + st.message());
  }
  options = audit::WithPluginConfig(snapshot, options);
  policy::Options po;
  po.params_name = f.params_name;
  po.params_namespace = f.params_namespace;
  po.deny.insert(f.deny.begin(), f.deny.end());
  auto docs = policy::Manifests(policy::ParamsFrom(snapshot, options), po);
  if (!docs.ok()) return UsageError(docs.status().message());
  std::cout << policy::ToYaml(*docs);
  return kExitOk;
}

}  // namespace

Command AddPolicyCommand(CLI::App& parent) {
  auto flags = std::make_shared<PolicyFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "policy",
      "Write ValidatingAdmissionPolicies (Kubernetes >= 1.30) that warn whoever submits a "
      "multi-node job that will fall back to sockets: the audit's job checks at admission");
  cmd->add_option("--from", flags->from,
                  "Snapshot whose nodes and device-plugin ConfigMaps fill the params: kubectl get "
                  "nodes,configmaps -A -o json (repeatable, - for stdin); without it only the "
                  "flags do");
  flags->checks.AddTo(cmd);
  cmd->add_option("--deny", flags->deny,
                  "Check id whose binding denies instead of warning (repeatable)");
  cmd->add_option("--params-name", flags->params_name, "The params ConfigMap's name")
      ->capture_default_str();
  cmd->add_option("--params-namespace", flags->params_namespace,
                  "The params ConfigMap's namespace")
      ->capture_default_str();
  return {cmd, [flags] { return RunPolicy(*flags); }};
}

}  // namespace tocsin::cli
