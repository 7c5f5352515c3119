#include "cli/audit_command.h"

#include <memory>

#include "audit/checks.h"
#include "cli/report_flags.h"
#include "k8s/decode.h"

namespace tocsin::cli {
namespace {

struct AuditFlags {
  ReportFlags report;
  std::vector<std::string> from;
  std::string now;
  std::vector<std::string> device_plugins;
  std::string fabric_nodes;
  std::vector<std::string> rdma_resources;
  bool summary = false;
  std::string fabric_network;
  std::string topology_label;
};

int RunAudit(const AuditFlags& f) {
  if (f.from.empty()) {
    return UsageError(
        "live cluster access is not implemented yet; give a snapshot with --from FILE "
        "(kubectl get nodes,pods,daemonsets -A -o json > snapshot.json)");
  }
  audit::Options options;
  options.now = Clock::now();
  if (!f.now.empty()) {
    auto now = ParseRfc3339(f.now);
    if (!now) return UsageError("--now: not an RFC 3339 time: \"" + f.now + "\"");
    options.now = *now;
  }
  for (const auto& dp : f.device_plugins) {
    if (dp.find('/') == std::string::npos) {
      return UsageError("--device-plugin wants NAMESPACE/NAME, got \"" + dp + "\"");
    }
  }
  options.device_plugins = f.device_plugins;
  options.rdma_resources = f.rdma_resources;
  options.fabric_network = f.fabric_network;
  options.topology_label = f.topology_label;
  if (!f.fabric_nodes.empty()) {
    auto sel = audit::ParseSelector(f.fabric_nodes);
    if (!sel.ok()) return UsageError(sel.status().message());
    options.fabric_selector = *sel;
  }
  k8s::Snapshot snapshot;
  for (const auto& path : f.from) {
    Status st = k8s::LoadFile(path, snapshot);
    if (!st.ok()) return UsageError("--from " + st.message());
  }
  Report report;
  report.command = "audit";
  report.host = snapshot.sources.empty() ? "" : "snapshot";
  report.generated_at = Clock::now();
  report.findings = audit::Run(snapshot, options);
  report.inventory = audit::Inventory(snapshot, options);
  report.tables = audit::Tables(snapshot, options);
  if (f.summary) report.tables.insert(report.tables.begin(), audit::SummaryTable(report.findings));
  return f.report.Emit(report);
}

}  // namespace

Command AddAuditCommand(CLI::App& parent) {
  auto flags = std::make_shared<AuditFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "audit",
      "Check a cluster's RDMA plumbing from Kubernetes objects: device-plugin DaemonSets, fabric "
      "nodes, crash loops, with onset times");
  flags->report.AddTo(cmd);
  cmd->add_option("--from", flags->from,
                  "Snapshot: kubectl get nodes,pods,daemonsets -A -o json|yaml (repeatable, - for "
                  "stdin)");
  cmd->add_option("--now", flags->now, "RFC 3339 time to compute ages against (default: now)");
  cmd->add_option("--device-plugin", flags->device_plugins,
                  "RDMA device-plugin DaemonSet NAMESPACE/NAME (repeatable; default: recognised "
                  "by name or image)");
  cmd->add_option("--fabric-nodes", flags->fabric_nodes,
                  "Label selector k=v[,k2=v2] for nodes with RDMA hardware (default: Node Feature "
                  "Discovery labels)");
  cmd->add_option("--rdma-resource", flags->rdma_resources,
                  "Extended resource that grants the fabric (repeatable; rdma/*, "
                  "vpc.amazonaws.com/efa and nvidia.com/*rdma*|*hostdev* are known)");
  cmd->add_option("--fabric-network", flags->fabric_network,
                  "Multus network that carries the fabric: multi-node job pods must attach it");
  cmd->add_option("--topology-label", flags->topology_label,
                  "Node label whose values are topology blocks (default: "
                  "cloud.google.com/gce-topology-block, network.topology.nvidia.com/block, "
                  "topology.k8s.aws/network-node-layer-1, topology.kubernetes.io/zone)");
  cmd->add_flag("--summary", flags->summary, "Add one line per check (for large clusters)");
  return {cmd, [flags] { return RunAudit(*flags); }};
}

}  // namespace tocsin::cli
