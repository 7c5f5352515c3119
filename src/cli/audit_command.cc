#include "cli/audit_command.h"
#include "cli/number_flags.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "audit/checks.h"
#include "audit/coverage.h"
#include "audit/plugin_config.h"
#include "cli/daemon_flags.h"
#include "cli/report_flags.h"
#include "k8s/api_client.h"
#include "k8s/decode.h"

namespace tocsin::cli {
namespace {

struct AuditFlags {
  ReportFlags report;
  std::vector<std::string> from;
  std::string now;
  AuditCheckFlags checks;
  bool summary = false;
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
  if (Status st = f.checks.Apply(options); !st.ok()) return UsageError(st.message());
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
  report.order = FindingOrder::kBySubject;
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
      ->check(Seconds())
      ->capture_default_str();
  cmd->add_option("--chunk-size", flags->chunk_size,
                  "Objects per list page (limit/continue); 0 lists each resource at once")
      ->check(Count(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--now", flags->now, "RFC 3339 time to compute ages against (default: now)");
  flags->checks.AddTo(cmd);
  cmd->add_flag("--summary", flags->summary, "Add one line per check (for large clusters)");
  return {cmd, [flags] { return RunAudit(*flags); }};
}

}  // namespace tocsin::cli
