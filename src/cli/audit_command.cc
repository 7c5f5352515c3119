#include "cli/audit_command.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "audit/checks.h"
#include "audit/coverage.h"
#include "audit/plugin_config.h"
#include "cli/report_flags.h"
#include "k8s/api_client.h"
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
  std::string kubeconfig;
  std::string context;
  double request_timeout_s = 30;
  int64_t chunk_size = 500;
};

// Lists the cluster through the API; errors (credentials, TLS, HTTP, decoding) are input
// errors that name the server and the request.
int LoadLive(const AuditFlags& f, const audit::Options& audit_options, k8s::Snapshot& snapshot) {
  auto access = k8s::ResolveAccess({f.kubeconfig, f.context}, k8s::AccessEnvironment());
  if (!access.ok()) return UsageError(access.status().message());
  if (access->insecure_skip_tls_verify) {
    std::cerr << "warning: TLS verification of " << access->server
              << " is off (insecure-skip-tls-verify in " << access->origin << ")\n";
  }
  k8s::ClientOptions options;
  options.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(f.request_timeout_s * 1000));
  options.connect_timeout = std::min(options.connect_timeout, options.request_timeout);
  options.page_size = f.chunk_size;
  auto client = k8s::ApiClient::Create(*access, options);
  auto plugin = [&](const k8s::DaemonSet& ds) { return audit::IsDevicePlugin(ds, audit_options); };
  Status st = client.ok() ? k8s::LoadCluster(**client, snapshot, plugin) : client.status();
  if (!st.ok()) {
    std::cerr << "tocsin: error: " << access->server << " (" << access->origin
              << "): " << st.message() << "\n";
    return st.code() == StatusCode::kInternal ? 3 : 2;
  }
  return 0;
}

int RunAudit(const AuditFlags& f) {
  if (!f.from.empty() && (!f.kubeconfig.empty() || !f.context.empty())) {
    return UsageError("--from reads a snapshot; --kubeconfig/--context are for the live API");
  }
  if (f.request_timeout_s <= 0) return UsageError("--request-timeout must be > 0");
  if (f.chunk_size < 0) return UsageError("--chunk-size must be >= 0");
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
  if (!f.from.empty()) {
    if (Status st = audit::CheckSnapshotUsable(snapshot); !st.ok()) {
      return UsageError("--from: " + st.message());
    }
  }
  if (f.from.empty()) {
    if (int rc = LoadLive(f, options, snapshot); rc != 0) return rc;
  }
  options = audit::WithPluginConfig(snapshot, options);
  Report report;
  report.command = "audit";
  report.host = f.from.empty() ? snapshot.sources.back() : "snapshot";
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
                  "Snapshot: kubectl get nodes,pods,daemonsets,configmaps -A -o json|yaml "
                  "(repeatable, - for stdin); without it the live API is read");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster "
                  "service account)");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("--request-timeout", flags->request_timeout_s,
                  "Seconds one API request may take (retries with backoff come on top)")
      ->capture_default_str();
  cmd->add_option("--chunk-size", flags->chunk_size,
                  "Objects per list page (limit/continue); 0 lists each resource at once")
      ->capture_default_str();
  cmd->add_option("--now", flags->now, "RFC 3339 time to compute ages against (default: now)");
  cmd->add_option("--device-plugin", flags->device_plugins,
                  "RDMA device-plugin DaemonSet NAMESPACE/NAME (repeatable; default: recognised "
                  "by name or image)");
  cmd->add_option("--fabric-nodes", flags->fabric_nodes,
                  "Label selector k=v[,k2=v2] for nodes with RDMA hardware (default: Node Feature "
                  "Discovery labels)");
  cmd->add_option("--rdma-resource", flags->rdma_resources,
                  "Extended resource that grants the fabric (repeatable; rdma/*, "
                  "vpc.amazonaws.com/efa, nvidia.com/*rdma*|*hostdev* and the pools the device "
                  "plugins' ConfigMaps declare are known)");
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
