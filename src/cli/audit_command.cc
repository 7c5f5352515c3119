#include "cli/audit_command.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "audit/checks.h"
#include "audit/coverage.h"
#include "audit/plugin_config.h"
#include "cli/daemon_flags.h"
#include "cli/live_flags.h"
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
  std::string context;
  LiveFlags live;
};

int RunAudit(const AuditFlags& f) {
  if (!f.from.empty() && (!f.live.kubeconfig.empty() || !f.context.empty())) {
    return UsageError("--from reads a snapshot; --kubeconfig/--context are for the live API");
  }
  if (Status st = f.live.Check(); !st.ok()) return UsageError(st.message());
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
    auto plugin = [&](const k8s::DaemonSet& ds) { return audit::IsDevicePlugin(ds, options); };
    int rc = LoadLive(
        f.live, f.context,
        [&](k8s::ApiClient& client, k8s::Snapshot& out) {
          return k8s::LoadCluster(client, out, plugin);
        },
        snapshot);
    if (rc != 0) return rc;
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
  return f.report.Emit(std::move(report));
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
  flags->live.AddTo(cmd);
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("--now", flags->now, "RFC 3339 time to compute ages against (default: now)");
  flags->checks.AddTo(cmd);
  cmd->add_flag("--summary", flags->summary, "Add one line per check (for large clusters)");
  return {cmd, [flags] { return RunAudit(*flags); }};
}

}  // namespace tocsin::cli
